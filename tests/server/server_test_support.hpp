#pragma once
// Helpers of the server tests that run a real server and client over loopback: blocking
// calls from a test thread, and a raw socket for requests the client would not send.
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "connect.hpp"
#include "eventually.hpp"
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

// A blocking socket speaking frames by hand.
class raw_connection {
 public:
  explicit raw_connection(std::uint16_t port) : socket_(io_) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
  }
  // A request for F with `timeout_ms` in its header.
  template <auto F, class... A>
  void send_request(std::uint64_t id, std::uint32_t timeout_ms, const A&... args) {
    std::string body;
    corvid::codec::string_sink sink{body};
    (corvid::codec::encode(sink, args), ...);
    corvid::protocol::frame_header h;
    h.type = corvid::protocol::msg_type::request;
    h.request_id = id;
    h.function_id = corvid::protocol::function_id<F>();
    h.timeout_ms = timeout_ms;
    h.body_length = static_cast<std::uint32_t>(body.size());
    std::string bytes(corvid::protocol::header_size, '\0');
    corvid::protocol::encode_header(h, bytes.data());
    bytes += body;
    asio::write(socket_, asio::buffer(bytes));
  }
  // A protocol ping (a control frame, answered by the connection itself with a pong).
  void send_ping(std::uint64_t id) {
    corvid::protocol::frame_header h;
    h.type = corvid::protocol::msg_type::ping;
    h.request_id = id;
    std::string bytes(corvid::protocol::header_size, '\0');
    corvid::protocol::encode_header(h, bytes.data());
    asio::write(socket_, asio::buffer(bytes));
  }
  struct frame {
    corvid::protocol::frame_header header;
    std::string body;
    std::string message() const {  // of an error reply
      std::string m;
      corvid::codec::decode(body, m);
      return m;
    }
  };
  std::optional<frame> read_frame() {
    char hdr[corvid::protocol::header_size];
    std::error_code ec;
    asio::read(socket_, asio::buffer(hdr), ec);
    if (ec) return std::nullopt;
    frame f;
    if (corvid::protocol::decode_header(hdr, f.header, UINT32_MAX) !=
        corvid::protocol::header_errc::ok)
      return std::nullopt;
    f.body.resize(f.header.payload_size());
    asio::read(socket_, asio::buffer(f.body), ec);
    if (ec) return std::nullopt;
    return f;
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
};

}  // namespace corvid_server_test
