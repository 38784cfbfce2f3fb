// rpc_client's is_connected(), pending_calls() and server_reactors() are read without the
// connection's mutex (a client_pool's pick reads them on every call, from any reactor): they
// must track the state they mirror exactly, and be race-free read from other threads (TSan).
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "connect.hpp"
#include "eventually.hpp"
#include "slowdown.hpp"

namespace {

using namespace std::chrono_literals;
using corvid::test::patience;

std::atomic<bool> gate_open{false};
std::atomic<int> held_started{0};

// Answers `x` once the test opens the gate.
corvid::task<int> held(int x) {
  held_started.fetch_add(1);
  while (!gate_open.load()) co_await corvid::sleep_for(1ms);
  co_return x;
}
std::string echo(std::string s) { return s; }

class state_server {
 public:
  state_server() : server_(make_config()) {
    gate_open = false;
    held_started = 0;
    server_.register_handler<held, echo>();
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  ~state_server() { gate_open = true; }  // no handler left waiting at stop
  static corvid::server_config make_config() {
    corvid::server_config c;
    c.address = "127.0.0.1";
    c.io_threads = 2;
    return c;
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  corvid::rpc_server& server() { return server_; }

 private:
  corvid::rpc_server server_;
};

bool eventually(auto pred) { return corvid::test::eventually(pred, patience(5000ms)); }

// `f` run on a thread of its own (not the caller's, not a reactor).
template <class F>
auto on_other_thread(F f) {
  decltype(f()) out{};
  std::thread([&] { out = f(); }).join();
  return out;
}

using held_reply = corvid::async_reply_t<held>;

std::vector<held_reply> send_held(corvid::rpc_client& client, int n) {
  return corvid::sync_wait([&]() -> corvid::task<std::vector<held_reply>> {
    std::vector<held_reply> out;
    for (int i = 0; i < n; ++i) {
      auto r = co_await client.send_request<held>(i);
      out.push_back(std::move(r));
    }
    co_return out;
  }());
}

corvid::expected<int, corvid::rpc_error> await_reply(held_reply& r) {
  return corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await std::move(r);
  }());
}

TEST(client_connection_state, pending_calls_counts_calls_until_their_replies) {
  state_server s;
  corvid::rpc_client client;
  EXPECT_EQ(client.pending_calls(), 0u);
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, s.endpoint())));
  EXPECT_EQ(client.pending_calls(), 0u);

  constexpr int n = 5;
  auto replies = send_held(client, n);
  EXPECT_EQ(client.pending_calls(), std::size_t{n});  // registered when queued
  EXPECT_EQ(on_other_thread([&] { return client.pending_calls(); }), std::size_t{n});
  ASSERT_TRUE(eventually([] { return held_started.load() == n; }));
  EXPECT_EQ(client.pending_calls(), std::size_t{n});  // sent, not answered

  gate_open = true;
  for (int i = 0; i < n; ++i) {
    auto r = await_reply(replies[static_cast<std::size_t>(i)]);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r, i);
  }
  // A call leaves the count before its caller resumes.
  EXPECT_EQ(client.pending_calls(), 0u);
  EXPECT_EQ(on_other_thread([&] { return client.pending_calls(); }), 0u);
}

TEST(client_connection_state, pending_calls_drops_on_timeout_and_on_close) {
  state_server s;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, s.endpoint())));

  auto timed_out =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
        co_return co_await client.call_for<held>(30ms, 1);
      }());
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().code(), corvid::rpc_errc::timeout);
  EXPECT_EQ(client.pending_calls(), 0u);

  auto replies = send_held(client, 3);
  EXPECT_EQ(client.pending_calls(), 3u);
  EXPECT_TRUE(client.is_connected());
  client.close();
  EXPECT_FALSE(client.is_connected());  // from the moment of close(), not once the reactor ran
  for (auto& reply : replies) {
    auto r = await_reply(reply);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
  }
  EXPECT_EQ(client.pending_calls(), 0u);
  EXPECT_FALSE(on_other_thread([&] { return client.is_connected(); }));
}

TEST(client_connection_state, is_connected_goes_false_when_the_server_closes) {
  auto s = std::make_unique<state_server>();
  corvid::rpc_client client;
  EXPECT_FALSE(client.is_connected());
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, s->endpoint())));
  EXPECT_TRUE(client.is_connected());
  EXPECT_TRUE(on_other_thread([&] { return client.is_connected(); }));

  std::atomic<bool> seen_closed{false};
  std::thread watcher([&] { seen_closed = eventually([&] { return !client.is_connected(); }); });
  s->server().stop();
  watcher.join();
  EXPECT_TRUE(seen_closed.load());
  EXPECT_EQ(client.pending_calls(), 0u);
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call<echo>(std::string("late"));
      }());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
  EXPECT_FALSE(client.is_connected());
}

TEST(client_connection_state, server_reactors_is_read_from_another_thread) {
  state_server s;
  corvid::client_config cfg;
  cfg.ask_server_reactors = true;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, s.endpoint())));
  EXPECT_TRUE(
      on_other_thread([&] { return eventually([&] { return client.server_reactors() == 2; }); }));
}

// Readers on other threads while calls come and go: every value read is one the state held
// (TSan checks that the reads are race-free).
TEST(client_connection_state, readers_on_other_threads_see_consistent_values) {
  state_server s;
  corvid::client_config cfg;
  cfg.ask_server_reactors = true;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, s.endpoint())));
  constexpr std::size_t batch = 16;
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (client.pending_calls() > batch) ++bad;
        if (!client.is_connected()) ++bad;
        const std::size_t r = client.server_reactors();
        if (r != 0 && r != 2) ++bad;
      }
    });
  }
  const bool all_ok = corvid::sync_wait([&]() -> corvid::task<bool> {
    for (int round = 0; round < 50; ++round) {
      std::vector<corvid::async_reply_t<echo>> replies;
      for (std::size_t i = 0; i < batch; ++i) {
        replies.push_back(co_await client.send_request<echo>(std::to_string(i)));
      }
      for (std::size_t i = 0; i < batch; ++i) {
        auto r = co_await std::move(replies[i]);
        if (!r || *r != std::to_string(i)) co_return false;
      }
    }
    co_return true;
  }());
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(client.pending_calls(), 0u);
}

}  // namespace
