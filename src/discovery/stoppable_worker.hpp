#pragma once
// The background thread of a discovery source or a registration: it polls, watches or keeps a
// lease alive, sleeping between rounds, and must end at once when its owner goes, even in
// the middle of a long sleep. Built on std::jthread: its stop_token wakes a sleeping thread
// through condition_variable_any, so no hand-kept stop flag can be raised without a notify,
// and destroying the worker stops and joins the thread.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>
#include <utility>

namespace corvid::discovery {

class stoppable_worker {
 public:
  stoppable_worker() = default;
  stoppable_worker(const stoppable_worker&) = delete;
  stoppable_worker& operator=(const stoppable_worker&) = delete;
  // Stops and joins: declare the worker after everything its thread touches, so that it is
  // destroyed (and the thread gone) first.
  ~stoppable_worker() { stop(); }

  // Runs body(token) on a new thread, once; the body returns soon after the token stops.
  void start(std::function<void(std::stop_token)> body) { thread_ = std::jthread(std::move(body)); }
  // Runs `body` every `interval`, and at once after wake(), until stopped.
  void start_polling(std::chrono::milliseconds interval, std::function<void()> body) {
    start([this, interval, body = std::move(body)](std::stop_token stop) {
      while (wait_for_wake(stop, interval)) body();
    });
  }

  // Asks the thread to stop, wakes it and waits for it to end. Idempotent; never from the
  // thread itself.
  void stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }
  // Asks a polling worker for a round now. A wake while a round runs is kept for the next
  // wait, never lost.
  void wake() {
    {
      std::lock_guard lk(mutex_);
      woken_ = true;
    }
    cv_.notify_all();
  }

  // On the thread: sleeps `d`, cut short only by a stop. False once stopping.
  bool sleep_for(const std::stop_token& stop, std::chrono::milliseconds d) {
    std::unique_lock lk(mutex_);
    cv_.wait_for(lk, stop, d, [] { return false; });
    return !stop.stop_requested();
  }
  // On the thread: sleeps `d`, cut short by a stop or a wake() (which it consumes). False
  // once stopping.
  bool wait_for_wake(const std::stop_token& stop, std::chrono::milliseconds d) {
    std::unique_lock lk(mutex_);
    cv_.wait_for(lk, stop, d, [&] { return woken_; });
    woken_ = false;
    return !stop.stop_requested();
  }

 private:
  std::mutex mutex_;
  std::condition_variable_any cv_;
  bool woken_ = false;   // under mutex_
  std::jthread thread_;  // last: joined before the cv and mutex it waits on go
};

}  // namespace corvid::discovery
