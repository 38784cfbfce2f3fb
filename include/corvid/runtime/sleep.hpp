#pragma once
// co_await corvid::sleep_for(d): suspends a coroutine without blocking its thread. It resumes
// on the reactor it ran on, or on a default-pool reactor when it ran on another thread.
#include <chrono>
#include <coroutine>
#include <optional>

#include <asio/steady_timer.hpp>

#include "corvid/runtime/io_pool.hpp"

namespace corvid {

class sleep_awaiter {
 public:
  explicit sleep_awaiter(std::chrono::steady_clock::duration d) : duration_(d) {}
  bool await_ready() const noexcept {
    return duration_ <= std::chrono::steady_clock::duration::zero();
  }
  void await_suspend(std::coroutine_handle<> h) {
    // Off a reactor (e.g. a call whose reply arrived before its caller suspended leaves the
    // caller on its own thread), the timer runs on the default pool, where it resumes.
    asio::io_context* ctx = current_reactor();
    if (ctx == nullptr) ctx = &io_pool::default_pool().next();
    timer_.emplace(*ctx, duration_);
    timer_->async_wait([h](const std::error_code&) { h.resume(); });
  }
  void await_resume() const noexcept {}

 private:
  std::chrono::steady_clock::duration duration_;
  std::optional<asio::steady_timer> timer_;
};

inline sleep_awaiter sleep_for(std::chrono::steady_clock::duration d) { return sleep_awaiter(d); }

}  // namespace corvid
