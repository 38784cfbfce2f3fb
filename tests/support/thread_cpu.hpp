#pragma once
// CPU time of another thread: a reactor's start hook records its clock, the test reads it.
// Used to tell a spinning reactor (CPU time ~ wall time) from a sleeping one (~0).
#include <atomic>
#include <chrono>
#include <ctime>
#include <pthread.h>

namespace corvid::test {

class thread_cpu_clock {
 public:
  // Call on the thread to be measured.
  void capture() {
    clockid_t id{};
    if (::pthread_getcpuclockid(::pthread_self(), &id) == 0) id_.store(id);
    ready_.store(true);
  }
  bool ready() const { return ready_.load(); }
  // CPU time the captured thread has used so far.
  std::chrono::nanoseconds used() const {
    timespec ts{};
    ::clock_gettime(id_.load(), &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  }

 private:
  std::atomic<clockid_t> id_{};
  std::atomic<bool> ready_{false};
};

}  // namespace corvid::test
