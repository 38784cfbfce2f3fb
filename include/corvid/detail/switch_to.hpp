#pragma once
// co_await switch_to(reactor): continue on that reactor's thread (no-op when already there).
// co_await post_to(reactor): always suspend and continue on that reactor, even from it.
#include <coroutine>

#include "corvid/detail/asio.hpp"
#include "corvid/detail/recycled_handler.hpp"
#include "corvid/runtime/io_pool.hpp"

namespace corvid::detail {

struct switch_to {
  asio::io_context& ctx;
  bool await_ready() const noexcept { return current_reactor() == &ctx; }
  void await_suspend(std::coroutine_handle<> h) const {
    asio::post(ctx, recycled([h] { h.resume(); }));
  }
  void await_resume() const noexcept {}
};

// For code that must leave the current call stack first: a completion that resumes a
// coroutine inside a call which still holds a lock, or a test that wants its coroutine to run
// on a reactor as a handler's would.
struct post_to {
  asio::io_context& ctx;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const {
    asio::post(ctx, recycled([h] { h.resume(); }));
  }
  void await_resume() const noexcept {}
};

}  // namespace corvid::detail
