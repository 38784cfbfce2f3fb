// Stopping servers and losing connections: every call still ends with a value or an error.
#include <atomic>
#include <thread>

#include "test_support.hpp"

namespace corvid_test {
namespace {

corvid::rpc_server* server_to_stop = nullptr;
int stop_from_handler() {
  server_to_stop->stop();  // on a reactor thread: begins the stop and returns
  return 42;
}

template <auto F, class... A>
corvid::task<std::vector<corvid::expected<int, corvid::rpc_error>>> many(corvid::rpc_client& c,
                                                                         int n, A... args) {
  std::vector<corvid::async_reply_t<F>> pending;
  for (int i = 0; i < n; ++i) pending.push_back(co_await c.template send_request<F>(args...));
  std::vector<corvid::expected<int, corvid::rpc_error>> out;
  for (auto& p : pending) out.push_back(co_await std::move(p));
  co_return out;
}

TEST(lifecycle, stop_finishes_calls_in_flight) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  sleepy_started = 0;
  std::thread stopper([&] {
    // Once all the calls below are running (or after a limit that means the test hung).
    EXPECT_TRUE(eventually([] { return sleepy_started == 50; }, 20s));
    srv.server().stop();
  });
  auto results = corvid::sync_wait(many<sleepy>(client, 50, 200));
  stopper.join();
  ASSERT_EQ(results.size(), 50u);
  for (auto& r : results) EXPECT_EQ(r.value_or(-1), 200) << r.error().message();
  // Stopped means stopped: no new connections.
  corvid::rpc_client late;
  EXPECT_TRUE(corvid::sync_wait(connect(late, srv.endpoint())));
}

TEST(lifecycle, stop_timeout_closes_connections_and_pending_calls_fail_promptly) {
  auto cfg = test_server::make_config();
  cfg.stop_timeout = 100ms;
  test_server srv(cfg);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  sleepy_started = 0;
  sleepy_finished = 0;
  int finished_when_stopped = -1;
  std::thread stopper([&] {
    EXPECT_TRUE(eventually([] { return sleepy_started == 20; }, 20s));
    srv.server().stop();
    finished_when_stopped = sleepy_finished;
  });
  auto results = corvid::sync_wait(many<sleepy>(client, 20, 1500));
  // The callers were released by the forced close, before the handlers finished...
  EXPECT_EQ(sleepy_finished, 0);
  stopper.join();
  // ...but stop() returned only after the handlers did: none still runs against user state.
  EXPECT_EQ(finished_when_stopped, 20);
  for (auto& r : results) {
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed) << r.error().message();
  }
}

TEST(lifecycle, stop_from_inside_a_handler) {
  auto cfg = test_server::make_config();
  corvid::rpc_server server(cfg);
  server.register_handler<stop_from_handler, echo>();
  ASSERT_FALSE(server.async_start());
  server_to_stop = &server;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, "127.0.0.1:" + std::to_string(server.port()))));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call<stop_from_handler>();
  }());
  EXPECT_EQ(r.value_or(-1), 42);  // the reply was flushed before the connection closed
  server.start();                 // returns once the stop begun in the handler completes
  EXPECT_EQ(server.connection_count(), 0u);
  server_to_stop = nullptr;
}

TEST(lifecycle, client_destroyed_with_calls_pending) {
  test_server srv;
  std::vector<corvid::async_reply_t<sleepy>> pending;
  {
    corvid::rpc_client client;
    ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
    corvid::sync_wait([&]() -> corvid::task<void> {
      for (int i = 0; i < 10; ++i) pending.push_back(co_await client.send_request<sleepy>(500));
    }());
  }
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (auto& p : pending) {
      auto r = co_await std::move(p);
      EXPECT_FALSE(r.has_value());
      if (!r) {
        EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
      }
    }
  }());
}

// Waits until cancelled: its caller's connection closes.
corvid::task<int> waits_for_cancel(corvid::request_context& ctx) {
  co_await ctx.sleep_for(std::chrono::seconds(30));
  co_return 1;
}

// The client's own io_pool stops before the close its destructor posts can run: the
// connection goes with the pool's reactor, and the calls it held still end (no caller waits
// forever, no call record leaks).
TEST(lifecycle, client_whose_reactor_stops_first_still_ends_its_calls) {
  corvid::rpc_server server(test_server::make_config());
  server.register_handler<waits_for_cancel>();
  ASSERT_FALSE(server.async_start());
  std::vector<corvid::async_reply_t<waits_for_cancel>> pending;
  {
    corvid::io_pool reactor(1);
    corvid::client_config cfg;
    cfg.pool = &reactor;
    corvid::rpc_client client(cfg);
    ASSERT_FALSE(corvid::sync_wait(connect(client, "127.0.0.1:" + std::to_string(server.port()))));
    corvid::sync_wait([&]() -> corvid::task<void> {
      for (int i = 0; i < 10; ++i)
        pending.push_back(co_await client.send_request<waits_for_cancel>());
      // One call whose caller lets go at once: only the connection holds it.
      (void)co_await client.send_request<waits_for_cancel>();
    }());
    reactor.stop();
  }  // the client posts its close to a stopped reactor; the pool then drops it
  // Nothing is left to end them later: they have ended by now, or never will.
  for (auto& p : pending) ASSERT_TRUE(p.ready());
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (auto& p : pending) {
      auto r = co_await std::move(p);
      EXPECT_FALSE(r.has_value());
      if (!r) {
        EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed) << r.error().message();
      }
    }
  }());
}

TEST(lifecycle, server_destroyed_while_clients_are_connected) {
  corvid::rpc_client client;
  {
    test_server srv;
    ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
    auto r =
        corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
          co_return co_await client.call<echo>("x");
        }());
    EXPECT_TRUE(r.has_value());
  }
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call<echo>("y");
      }());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
}

TEST(lifecycle, registering_twice_or_after_start_throws) {
  corvid::rpc_server server(test_server::make_config());
  server.register_handler<echo>();
  EXPECT_THROW(server.register_handler<echo>(), std::logic_error);
  ASSERT_FALSE(server.async_start());
  EXPECT_THROW(server.register_handler<add>(), std::logic_error);
  EXPECT_TRUE(server.async_start());  // already started
  server.stop();
  server.stop();  // idempotent
}

TEST(lifecycle, listen_failure_is_reported) {
  test_server srv;
  auto cfg = test_server::make_config();
  cfg.port = srv.port();  // taken
  corvid::rpc_server second(cfg);
  auto ec = second.async_start();
  EXPECT_TRUE(ec);
  auto bad = test_server::make_config();
  bad.address = "not-an-address";
  corvid::rpc_server third(bad);
  EXPECT_EQ(third.async_start().code(), corvid::rpc_errc::invalid_argument);
}

}  // namespace
}  // namespace corvid_test
