#pragma once
// co_await corvid::sleep_for(d): suspends a coroutine without blocking its thread. It resumes
// on the reactor it ran on, or on a default-pool reactor when it ran on another thread.
#include <chrono>
#include <coroutine>

#include "corvid/detail/timer_storage.hpp"
#include "corvid/export.hpp"

namespace corvid {

class CORVID_API sleep_awaiter {
 public:
  explicit sleep_awaiter(std::chrono::steady_clock::duration d) : duration_(d) {}
  bool await_ready() const noexcept {
    return duration_ <= std::chrono::steady_clock::duration::zero();
  }
  void await_suspend(std::coroutine_handle<> h);
  void await_resume() const noexcept {}

 private:
  std::chrono::steady_clock::duration duration_;
  detail::timer_storage timer_;
};

inline sleep_awaiter sleep_for(std::chrono::steady_clock::duration d) { return sleep_awaiter(d); }

}  // namespace corvid
