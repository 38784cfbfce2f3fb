#pragma once
// co_await corvid::sleep_for(d): suspends a coroutine running on a corvid reactor (a handler,
// or a client coroutine resumed by a reply) without blocking the reactor.
#include <chrono>
#include <coroutine>
#include <optional>
#include <stdexcept>

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
    asio::io_context* ctx = current_reactor();
    if (ctx == nullptr) throw std::logic_error("corvid::sleep_for needs a corvid reactor thread");
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
