// client_pool spreads one process's calls over the server's reactors: the server states its
// reactor count in the pong answering the pool's connect-time ping, and the pool opens up to one
// connection per reactor once the least-loaded connection has calls in flight.
#include <map>
#include <mutex>

#include <corvid/detail/switch_to.hpp>

#include "background_quiet.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

// Which server reactor ran each call (the handler runs on its connection's reactor).
struct reactor_log {
  std::mutex mutex;
  std::map<const asio::io_context*, int> calls;
  void clear() {
    std::lock_guard lk(mutex);
    calls.clear();
  }
  std::map<const asio::io_context*, int> snapshot() {
    std::lock_guard lk(mutex);
    return calls;
  }
};
reactor_log& log() {
  static reactor_log l;
  return l;
}

// Notes its reactor, then holds the call `ms` so that callers overlap.
corvid::task<int> where(int ms) {
  {
    std::lock_guard lk(log().mutex);
    ++log().calls[corvid::current_reactor()];
  }
  if (ms > 0) co_await corvid::sleep_for(std::chrono::milliseconds(ms));
  co_return ms;
}

class reactor_server {
 public:
  explicit reactor_server(std::size_t io_threads) : server_(config(io_threads)) {
    server_.register_handler<where>();
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
    log().clear();
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  corvid::rpc_server& server() { return server_; }

 private:
  static corvid::server_config config(std::size_t io_threads) {
    corvid::server_config c;
    c.address = "127.0.0.1";
    c.io_threads = io_threads;
    return c;
  }
  corvid::rpc_server server_;
};

// `rounds` bursts of `callers` concurrent calls on the pool, each held `ms` by the server.
// The number of calls that succeeded. With `home`, the caller runs on that client reactor
// from its first call, as a caller in an async program lives on one; without, it starts on
// this thread and continues wherever its first reply resumes it.
int bursts(corvid::client_pool& pool, int rounds, int callers, int ms,
           asio::io_context* home = nullptr) {
  return corvid::sync_wait([&]() -> corvid::task<int> {
    if (home != nullptr) co_await corvid::detail::switch_to{*home};
    int ok = 0;
    for (int r = 0; r < rounds; ++r) {
      std::vector<corvid::async_reply_t<where>> pending;
      for (int i = 0; i < callers; ++i) {
        auto q = co_await pool.send_request<where>(ms);
        if (q) pending.push_back(std::move(*q));
      }
      for (auto& p : pending) {
        auto v = co_await std::move(p);
        if (v && *v == ms) ++ok;
      }
    }
    co_return ok;
  }());
}

class pool_reactors : public ::testing::TestWithParam<std::size_t> {};

// The main case: one pool with its default settings, 64 concurrent callers (more than
// spread_in_flight per reactor), and every reactor of the server carries a fair share of the
// calls.
TEST_P(pool_reactors, every_server_reactor_serves_calls_from_one_default_pool) {
  const std::size_t reactors = GetParam();
  reactor_server srv(reactors);
  auto pool = corvid::client_pool::create(srv.endpoint());
  constexpr int rounds = 40, callers = 64;
  // The caller lives on one client reactor, where the pool's connections for it are made.
  // Started on this thread instead, its first calls go through the pool's slow path, which
  // places a connection it grows on the least used reactor; once its first reply moved it to
  // another one it never used that connection again (a clean-clone TSan run: 8 calls on one
  // server reactor).
  asio::io_context* home = &corvid::io_pool::default_pool().at(0);
  // The pool grows once the server's pong has stated its reactors; the balance is counted
  // from then on, however long connects take on this machine.
  ASSERT_TRUE(eventually([&] {
    bursts(*pool, 1, callers, 1, home);
    return pool->stats().connections == reactors;
  })) << "the pool never grew to one connection per server reactor";
  log().clear();
  EXPECT_EQ(bursts(*pool, rounds, callers, 1, home), rounds * callers);
  const auto s = pool->stats();
  EXPECT_EQ(s.server_reactors, reactors);
  EXPECT_EQ(s.max_connections, std::max<std::size_t>(reactors, 4)) << "auto: the reactors, ≥ 4";
  EXPECT_EQ(s.connections, reactors) << "one connection per server reactor";
  const auto seen = log().snapshot();
  EXPECT_EQ(seen.size(), reactors) << "reactors that ran calls";
  for (const auto& [reactor, n] : seen) {
    // Balanced over the open connections: each reactor well above a starved share.
    EXPECT_GE(n, rounds * callers / static_cast<int>(reactors) / 3) << "calls on one reactor";
  }
}

INSTANTIATE_TEST_SUITE_P(io_threads, pool_reactors, ::testing::Values(2, 4));

// One caller at a time has nothing in flight when it calls: one connection, whatever the
// server's reactors.
TEST(pool_spread, one_caller_uses_one_connection) {
  reactor_server srv(4);
  auto pool = corvid::client_pool::create(srv.endpoint());
  EXPECT_EQ(bursts(*pool, 200, 1, 0), 200);
  const auto s = pool->stats();
  EXPECT_EQ(s.server_reactors, 4u);
  EXPECT_EQ(s.connections, 1u);
  EXPECT_EQ(s.connect_attempts, 1u);
  EXPECT_EQ(log().snapshot().size(), 1u);
}

// spread_in_flight callers: the last finds one call fewer in flight than spread_in_flight:
// still one connection, where their requests pipeline.
TEST(pool_spread, callers_up_to_the_spread_threshold_share_one_connection) {
  reactor_server srv(4);
  auto pool = corvid::client_pool::create(srv.endpoint());
  const int callers = static_cast<int>(corvid::pool_config{}.spread_in_flight);
  EXPECT_EQ(bursts(*pool, 25, callers, 1), 25 * callers);
  EXPECT_EQ(pool->stats().connect_attempts, 1u);
}

// A server with one reactor: spreading has nowhere to go, so the pool keeps one connection
// until 128 calls are in flight on it (max_in_flight_per_connection), then opens more, up to
// auto's floor of 4.
TEST(pool_spread, one_reactor_server_keeps_one_connection_until_128_in_flight) {
  reactor_server srv(1);
  auto pool = corvid::client_pool::create(srv.endpoint());
  EXPECT_EQ(bursts(*pool, 10, 64, 1), 640);
  auto s = pool->stats();
  EXPECT_EQ(s.server_reactors, 1u);
  EXPECT_EQ(s.max_connections, corvid::pool_config::auto_min_connections);
  EXPECT_EQ(s.connect_attempts, 1u);
  EXPECT_EQ(bursts(*pool, 3, 400, 1), 1200);
  s = pool->stats();
  EXPECT_GT(s.connections, 1u) << "past 128 in flight the old rule opens more";
  EXPECT_LE(s.connect_attempts, 4u);
}

// An explicit max_connections caps the spreading: 2 connections to a 4-reactor server.
TEST(pool_spread, explicit_max_connections_still_caps) {
  reactor_server srv(4);
  corvid::pool_config cfg;
  cfg.max_connections = 2;
  auto pool = corvid::client_pool::create(srv.endpoint(), cfg);
  EXPECT_EQ(bursts(*pool, 40, 32, 1), 40 * 32);
  const auto s = pool->stats();
  EXPECT_EQ(s.server_reactors, 4u);
  EXPECT_EQ(s.max_connections, 2u);
  EXPECT_EQ(s.connections, 2u);
  EXPECT_LE(s.connect_attempts, 2u);
  EXPECT_EQ(log().snapshot().size(), 2u);
}

// spread_in_flight = 0 is the rule before servers stated their reactors: one connection until
// 128 calls are in flight (what corvid-bench reactors measures as "before").
TEST(pool_spread, spread_off_keeps_the_old_rule) {
  reactor_server srv(4);
  corvid::pool_config cfg;
  cfg.spread_in_flight = 0;
  cfg.max_connections = 4;
  auto pool = corvid::client_pool::create(srv.endpoint(), cfg);
  EXPECT_EQ(bursts(*pool, 20, 32, 1), 20 * 32);
  const auto s = pool->stats();
  EXPECT_EQ(s.connect_attempts, 1u);
  EXPECT_EQ(s.server_reactors, 0u) << "not asked";
  EXPECT_EQ(log().snapshot().size(), 1u);
}

// A plain rpc_client does not ask (its first bytes stay its first request); one that asks
// learns the count, again after a reconnect.
TEST(pool_spread, rpc_client_learns_the_reactor_count_when_it_asks) {
  reactor_server srv(2);
  corvid::rpc_client plain;
  ASSERT_FALSE(corvid::sync_wait(connect(plain, srv.endpoint())));
  corvid::client_config asking_cfg;
  asking_cfg.ask_server_reactors = true;
  corvid::rpc_client asking(asking_cfg);
  for (int round = 0; round < 2; ++round) {
    ASSERT_FALSE(corvid::sync_wait(connect(asking, srv.endpoint())));
    EXPECT_TRUE(eventually([&] { return asking.server_reactors() == 2; })) << round;
    EXPECT_EQ(asking.stats().pings_sent, 0u) << "the connect-time ping is not a heartbeat";
  }
  auto r = corvid::sync_wait([&]() -> corvid::task<bool> {
    auto v = co_await plain.call<where>(0);
    co_return v.has_value();
  }());
  EXPECT_TRUE(r);
  EXPECT_EQ(plain.server_reactors(), 0u);
}

}  // namespace
}  // namespace corvid_test
