// client_pool keeps a caller's calls on the caller's own reactor (io thread of the client's
// io_pool), and the snapshot callers read without a lock can be swapped (connections opened,
// aged out, reaped) under them without a call lost or made twice.
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "background_quiet.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

std::atomic<int> counted_calls{0};
int counted_add(int a, int b) {
  ++counted_calls;
  return a + b;
}
// Held 2 ms, so that callers overlap and the pool grows.
corvid::task<int> held_add(int a, int b) {
  co_await corvid::sleep_for(std::chrono::milliseconds(2));
  co_return a + b;
}

corvid::rpc_server& start(corvid::rpc_server& s) {
  s.register_handler<counted_add, held_add>();
  if (auto ec = s.async_start()) throw std::runtime_error(ec.message());
  return s;
}

corvid::server_config server_threads(std::size_t n) {
  corvid::server_config c;
  c.address = "127.0.0.1";
  c.io_threads = n;
  return c;
}

struct tally {
  std::atomic<int> ok{0}, wrong{0}, failed{0}, moved{0}, done{0};
  std::mutex mutex;
  std::string first_error;
  void fail(const corvid::rpc_error& e) {
    ++failed;
    std::lock_guard lk(mutex);
    if (first_error.empty()) first_error = e.message();
  }
};

// `calls` calls of F from reactor `i`, each checked for its answer and for the reactor it
// resumed on (a caller moved elsewhere goes home again).
template <auto F>
corvid::detail::detached caller(corvid::client_pool& pool, corvid::io_pool& reactors, std::size_t i,
                                int id, int calls, tally& t) {
  co_await hop{reactors.at(i)};
  for (int k = 0; k < calls; ++k) {
    auto r = co_await pool.call<F>(id, k);
    if (!r) {
      t.fail(r.error());
    } else if (*r != id + k) {
      ++t.wrong;
    } else {
      ++t.ok;
    }
    if (corvid::current_reactor() != &reactors.at(i)) {
      ++t.moved;
      co_await hop{reactors.at(i)};
    }
  }
  ++t.done;
}

// Callers on each of two client reactors, held by the server so that each reactor's load asks
// for a connection of its own; then fresh callers on each reactor: every call finds a
// connection on its caller's reactor, so none crosses and every caller resumes where it called.
TEST(pool_local, calls_stay_on_the_callers_reactor) {
  corvid::rpc_server srv(server_threads(2));
  start(srv);
  corvid::io_pool reactors(2);
  corvid::pool_config cfg;
  cfg.client.pool = &reactors;
  auto pool = corvid::client_pool::create("127.0.0.1:" + std::to_string(srv.port()), cfg);
  constexpr int per_reactor = 16, calls = 200;
  tally warm;
  for (std::size_t i = 0; i < 2; ++i) {
    for (int c = 0; c < per_reactor; ++c) caller<held_add>(*pool, reactors, i, c, 20, warm);
  }
  ASSERT_TRUE(eventually([&] { return warm.done == 2 * per_reactor; }, 30s));
  EXPECT_EQ(warm.ok, 2 * per_reactor * 20);
  const auto before = pool->stats();
  ASSERT_GE(before.connections, 2u);
  tally t;
  for (std::size_t i = 0; i < 2; ++i) {
    for (int c = 0; c < per_reactor; ++c) caller<counted_add>(*pool, reactors, i, c, calls, t);
  }
  ASSERT_TRUE(eventually([&] { return t.done == 2 * per_reactor; }, 30s));
  EXPECT_EQ(t.ok, 2 * per_reactor * calls);
  EXPECT_EQ(t.moved, 0) << "calls resumed on another reactor than their caller's";
  const auto after = pool->stats();
  EXPECT_EQ(after.cross_reactor_calls, before.cross_reactor_calls);
  EXPECT_LE(after.connections, after.max_connections);
  pool.reset();
  reactors.stop();
}

// A caller on no reactor of the pool (this thread) is handed a connection elsewhere: counted.
TEST(pool_local, calls_from_other_threads_are_counted_as_crossing) {
  corvid::rpc_server srv(server_threads(1));
  start(srv);
  auto pool = corvid::client_pool::create("127.0.0.1:" + std::to_string(srv.port()));
  for (int k = 0; k < 3; ++k) {
    auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
      co_return co_await pool->call<counted_add>(k, 1);
    }());
    ASSERT_TRUE(r.has_value());
  }
  // The first call made the connection (and resumed on its reactor); the two others crossed.
  EXPECT_EQ(pool->stats().cross_reactor_calls, 2u);
}

// Connections aged out every 20 ms, idle ones reaped, new ones opened, all while 48
// callers on three reactors call: every call answers once, right, and the server ran each
// exactly once (a call retried because it was never sent counts once).
TEST(pool_local, snapshot_swaps_under_concurrent_callers_lose_and_repeat_no_call) {
  corvid::rpc_server srv(server_threads(2));
  start(srv);
  corvid::io_pool reactors(3);
  corvid::pool_config cfg;
  cfg.client.pool = &reactors;
  // Room under the cap for new connections while the retiring ones finish their calls.
  cfg.max_connections = 16;
  cfg.max_connection_age = 20ms;
  cfg.idle_timeout = 10ms;
  cfg.spread_in_flight = 2;
  auto pool = corvid::client_pool::create("127.0.0.1:" + std::to_string(srv.port()), cfg);
  counted_calls = 0;
  tally t;
  constexpr int per_reactor = 16, calls = 1000;
  for (std::size_t i = 0; i < 3; ++i) {
    for (int c = 0; c < per_reactor; ++c) caller<counted_add>(*pool, reactors, i, c, calls, t);
  }
  ASSERT_TRUE(eventually([&] { return t.done == 3 * per_reactor; }, 60s));
  EXPECT_EQ(t.failed, 0) << t.first_error;
  EXPECT_EQ(t.wrong, 0);
  EXPECT_EQ(t.ok, 3 * per_reactor * calls);
  EXPECT_EQ(counted_calls, t.ok.load()) << "the server ran a call twice, or one was lost";
  const auto s = pool->stats();
  EXPECT_GT(s.closed_aged + s.closed_idle, 0u) << "no connection was retired: nothing swapped";
  EXPECT_GT(s.connect_attempts, 3u);
  pool.reset();
  reactors.stop();
}

}  // namespace
}  // namespace corvid_test
