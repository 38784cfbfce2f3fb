#pragma once
// Helpers of the server tests that run a real server and client over loopback: blocking
// calls from a test thread, and the shared raw socket for requests the client would not send.
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "connect.hpp"
#include "eventually.hpp"
#include "raw_connection.hpp"
#include "slowdown.hpp"

namespace corvid_server_test {

using namespace std::chrono_literals;

template <auto F>
using result_t = corvid::expected<corvid::detail::client_result_t<F>, corvid::rpc_error>;

inline corvid::server_config loopback_config(std::size_t io_threads = 1) {
  corvid::server_config c;
  c.address = "127.0.0.1";
  c.io_threads = io_threads;
  return c;
}

inline std::string endpoint(const corvid::rpc_server& s) {
  return "127.0.0.1:" + std::to_string(s.port());
}

inline void connect(corvid::rpc_client& c, const corvid::rpc_server& s) {
  auto ec = corvid::sync_wait(corvid::test::connect(c, endpoint(s)));
  ASSERT_FALSE(ec) << ec.message();
}

// Calls F and waits for the result.
template <auto F, class... A>
result_t<F> call(corvid::rpc_client& c, A... args) {
  return corvid::sync_wait([&]() -> corvid::task<result_t<F>> {
    co_return co_await c.call<F>(args...);
  }());
}

// Queues a call of F; await() its reply later.
template <auto F, class... A>
corvid::async_reply_t<F> send(corvid::rpc_client& c, A... args) {
  return corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<F>> {
    co_return co_await c.send_request<F>(args...);
  }());
}

template <auto F>
result_t<F> await(corvid::async_reply_t<F>& reply) {
  return corvid::sync_wait([&]() -> corvid::task<result_t<F>> {
    co_return co_await std::move(reply);
  }());
}

// Polls `pred` until it holds or `limit` (scaled) passes.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  return corvid::test::eventually(std::move(pred), corvid::test::patience(limit));
}

using corvid::test::raw_connection;

}  // namespace corvid_server_test
