#pragma once
// co_await hop{reactor}: always suspends and resumes on `reactor` (a client or server io
// thread), so a test's coroutine runs there from then on, as a handler's would.
#include <coroutine>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

namespace corvid::test {

struct hop {
  asio::io_context& reactor;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const {
    asio::post(reactor, [h] { h.resume(); });
  }
  void await_resume() const noexcept {}
};

}  // namespace corvid::test
