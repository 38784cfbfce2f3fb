#pragma once
// Shared pieces of the RDMA tests: the provider's config (test_provider.hpp), a server with
// RDMA enabled.
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "connect.hpp"
#include "test_provider.hpp"

namespace corvid_rdma_test {

using namespace std::chrono_literals;

inline std::string_view echo(std::string_view s) { return s; }
inline int add(int a, int b) { return a + b; }
// A big request with a small reply: pressure on the server's receives only.
inline std::size_t length(std::string_view s) { return s.size(); }
// Blocks its reactor for `ms`: nothing on that reactor (receives included) moves meanwhile.
inline int block_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}

inline corvid::server_config server_config() {
  corvid::server_config c;
  c.address = "127.0.0.1";
  c.io_threads = 2;
  return c;
}

class rdma_server {
 public:
  explicit rdma_server(corvid::ibv_config ibv = test_ibv(),
                       corvid::server_config cfg = server_config())
      : server_(std::move(cfg)) {
    server_.register_handler<echo, add, length, block_ms>();
    if (auto ec = server_.init_ibv(ibv)) throw std::runtime_error("init_ibv: " + ec.message());
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  corvid::rpc_server& server() { return server_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }

 private:
  corvid::rpc_server server_;
};

using corvid::test::connect;  // tests/support/connect.hpp

// Runs one call (an awaitable such as client.call<f>(...)) to completion from a test thread.
template <class Awaitable>
auto run(Awaitable a) {
  using result = decltype(a.await_resume());
  return corvid::sync_wait([](Awaitable aw) -> corvid::task<result> {
    co_return co_await std::move(aw);
  }(std::move(a)));
}

// An RDMA client connected to `ep`; fails the test on error.
inline void connect_rdma(corvid::rpc_client& c, const std::string& ep,
                         corvid::ibv_config ibv = test_ibv()) {
  ASSERT_FALSE(c.init_ibv(ibv));
  auto ec = corvid::sync_wait(connect(c, ep));
  ASSERT_FALSE(ec) << ec.message();
}

inline std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return s;
}

}  // namespace corvid_rdma_test
