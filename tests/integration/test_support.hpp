#pragma once
// Shared pieces of the loopback integration tests: the handlers, a started server, and a raw
// blocking socket for speaking (broken) protocol at a server by hand.
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <asio/ip/tcp.hpp>
#include <gtest/gtest.h>

#include <corvid/corvid.hpp>
#include <corvid/detail/switch_to.hpp>

#include "connect.hpp"
#include "eventually.hpp"
#include "process_memory.hpp"
#include "raw_connection.hpp"
#include <sys/socket.h>

namespace corvid_test {

using namespace std::chrono_literals;

inline std::string_view echo(std::string_view s) { return s; }
inline corvid::task<int> add(int a, int b) { co_return a + b; }
struct point {
  int x;
  double y;
  std::string tag;
  std::vector<int> v;
};
inline point move(point p, int dx) {
  p.x += dx;
  p.v.push_back(dx);
  return p;
}
inline void noop() {}
inline int fail_always(int) { throw std::runtime_error("boom: handler failed"); }
// Calls of sleepy that have begun, and that have ended (a test that reads them resets them).
inline std::atomic<int> sleepy_started{0};
inline std::atomic<int> sleepy_finished{0};
// Sleeps `ms` on the reactor, then answers `ms`.
inline corvid::task<int> sleepy(int ms) {
  ++sleepy_started;
  co_await corvid::sleep_for(std::chrono::milliseconds(ms));
  ++sleepy_finished;
  co_return ms;
}
// Echoes the request attachment with a suffix, and answers with the caller's address.
inline std::string with_context(corvid::request_context& ctx, std::string suffix) {
  ctx.set_response_attachment(std::string(ctx.request_attachment()) + suffix);
  return ctx.peer_address();
}
struct calculator {
  int base = 0;
  int plus(int x) const { return base + x; }
  corvid::task<int> times(int x) { co_return base* x; }
};

// A server with every test handler registered, listening on an ephemeral port.
class test_server {
 public:
  explicit test_server(corvid::server_config cfg = make_config()) : server_(std::move(cfg)) {
    server_.register_handler<echo, add, move, noop, fail_always, sleepy, with_context>();
    server_.register_handler<&calculator::plus, &calculator::times>(&calc_);
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  static corvid::server_config make_config() {
    corvid::server_config c;
    c.address = "127.0.0.1";
    c.io_threads = 2;
    return c;
  }
  corvid::rpc_server& server() { return server_; }
  std::uint16_t port() const { return server_.port(); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  calculator& calc() { return calc_; }

 private:
  calculator calc_{10};
  corvid::rpc_server server_;
};

using corvid::test::connect;          // tests/support/connect.hpp
using hop = corvid::detail::post_to;  // a test coroutine runs on a reactor from then on

// Polls `pred` until it holds or `limit` passes; the final answer of `pred`.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  return corvid::test::eventually(std::move(pred), limit);
}

using corvid::test::raw_connection;
using corvid::test::vm_rss;

// Accepts connections and never reads or writes: to a client, a server that vanished
// without a FIN or RST (the half-open case).
class silent_server {
 public:
  silent_server() : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] {
      for (;;) {
        asio::ip::tcp::socket s(io_);
        std::error_code ec;
        acceptor_.accept(s, ec);
        if (ec) return;
        std::lock_guard lk(mutex_);
        held_.push_back(std::move(s));
      }
    });
  }
  ~silent_server() {
    // Wakes the blocking accept (close alone does not), then joins.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    thread_.join();
    std::error_code ignored;
    acceptor_.close(ignored);
  }
  std::string endpoint() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::mutex mutex_;
  std::vector<asio::ip::tcp::socket> held_;
  std::thread thread_;
};

// Bytes of one frame: a header for `body`, then `body`.
inline std::string frame_bytes(corvid::protocol::frame_header h, std::string_view body) {
  h.body_length = static_cast<std::uint32_t>(body.size());
  std::string out(corvid::protocol::header_size, '\0');
  corvid::protocol::encode_header(h, out.data());
  out.append(body);
  return out;
}

// Bytes of one request frame whose body encodes `args`.
template <class... Args>
std::string request_frame(std::uint64_t id, std::uint32_t function_id, const Args&... args) {
  std::string body;
  corvid::codec::string_sink sink{body};
  (corvid::codec::encode(sink, args), ...);
  corvid::protocol::frame_header h;
  h.type = corvid::protocol::msg_type::request;
  h.request_id = id;
  h.function_id = function_id;
  return frame_bytes(h, body);
}

}  // namespace corvid_test
