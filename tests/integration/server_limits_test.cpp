// Deadlines carried on the wire, connection limits and idle timeouts on the server.
#include <atomic>
#include <thread>

#include "test_support.hpp"

namespace corvid_test {
namespace {

std::atomic<int> counted_runs{0};
// Blocks its reactor thread: requests behind it in the same read batch wait.
int block_reactor(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
int counted() { return ++counted_runs; }
// Milliseconds the caller has left, or -1 if it sent no deadline.
int deadline_left(corvid::request_context& ctx) {
  auto d = ctx.deadline();
  if (!d) return -1;
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(*d - std::chrono::steady_clock::now())
          .count());
}

class limits_server {
 public:
  explicit limits_server(corvid::server_config cfg) : server_(std::move(cfg)) {
    server_.register_handler<block_reactor, counted, deadline_left, echo>();
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  static corvid::server_config config() {
    corvid::server_config c;
    c.address = "127.0.0.1";
    c.io_threads = 1;
    return c;
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  corvid::rpc_server& server() { return server_; }

 private:
  corvid::rpc_server server_;
};

TEST(server_limits, request_whose_deadline_passed_while_queued_is_not_run) {
  limits_server srv(limits_server::config());
  counted_runs = 0;
  // Both requests leave in one write, so the server reads them together: the second waits
  // 300 ms behind the first, longer than its 50 ms budget (deadlines count from when the
  // server reads a request). A raw socket, because a client's coalescing is not a promise that
  // two calls share a write.
  corvid::test::raw_connection raw(srv.server().port());
  raw.send(corvid::test::request_frame<block_reactor>(1, 0, 300) +
           corvid::test::request_frame<counted>(2, 50));
  auto slow = raw.read_frame();
  auto late = raw.read_frame();
  ASSERT_TRUE(slow && late);
  if (slow->header.request_id == 2) std::swap(slow, late);
  EXPECT_EQ(slow->header.status, corvid::rpc_errc::ok);
  EXPECT_EQ(late->header.request_id, 2u);
  EXPECT_EQ(late->header.status, corvid::rpc_errc::timeout) << late->message();
  EXPECT_EQ(counted_runs, 0) << "the expired request's handler ran";
  // The same request with time to spare runs.
  raw.send_request<counted>(3, 5000);
  auto ok = raw.read_frame();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->header.status, corvid::rpc_errc::ok);
  EXPECT_EQ(counted_runs, 1);
}

TEST(server_limits, handler_sees_the_callers_deadline) {
  limits_server srv(limits_server::config());
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto with = co_await client.call_for<deadline_left>(20s);
    // Some of the 20 s went on the way (seconds of it would mean the test hung).
    EXPECT_GT(with.value_or(-1), 10'000);
    EXPECT_LE(with.value_or(-1), 20'000);
    auto none = co_await client.call_with<deadline_left>({0ms, {}});  // 0: no deadline
    EXPECT_EQ(none.has_value() ? none->value : -2, -1);
  }());
}

TEST(server_limits, connections_over_the_limit_are_refused_clearly) {
  auto cfg = limits_server::config();
  cfg.max_connections = 2;
  limits_server srv(cfg);
  auto call_echo = [&](corvid::rpc_client& c) {
    return corvid::sync_wait(
        [&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
          co_return co_await c.call<echo>("x");
        }());
  };
  auto a = std::make_unique<corvid::rpc_client>();
  corvid::rpc_client b, c;
  ASSERT_FALSE(corvid::sync_wait(connect(*a, srv.endpoint())));
  ASSERT_FALSE(corvid::sync_wait(connect(b, srv.endpoint())));
  EXPECT_TRUE(call_echo(*a).has_value());
  EXPECT_TRUE(call_echo(b).has_value());
  ASSERT_FALSE(corvid::sync_wait(connect(c, srv.endpoint())));  // TCP accepts; corvid refuses
  auto refused = call_echo(c);
  ASSERT_FALSE(refused.has_value());
  // server_busy if the call was sent before the refusal arrived; connection_closed (with the
  // refusal as the reason) if the connection was already refused when the call was made.
  EXPECT_TRUE(refused.error().code() == corvid::rpc_errc::server_busy ||
              refused.error().code() == corvid::rpc_errc::connection_closed)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("connection limit (2)"), std::string::npos)
      << refused.error().message();
  a.reset();  // frees a slot
  ASSERT_TRUE(eventually([&] { return srv.server().connection_count() < 2; }));
  corvid::rpc_client d;
  ASSERT_FALSE(corvid::sync_wait(connect(d, srv.endpoint())));
  EXPECT_TRUE(call_echo(d).has_value());
}

TEST(server_limits, idle_connections_are_closed_busy_ones_are_not) {
  auto cfg = limits_server::config();
  // Long enough that the active client below, calling every 40 ms, never looks idle on a
  // loaded machine.
  cfg.idle_timeout = 500ms;
  limits_server srv(cfg);
  const auto port = static_cast<std::uint16_t>(std::stoi(srv.endpoint().substr(10)));
  const auto begin = std::chrono::steady_clock::now();  // before the server can accept it
  raw_connection silent(port);
  EXPECT_TRUE(silent.closed_by_peer());
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 500ms);  // a timer never fires early
  // A client that keeps calling, and one whose call outlasts the timeout, stay connected.
  corvid::rpc_client active;
  ASSERT_FALSE(corvid::sync_wait(connect(active, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (int i = 0; i < 10; ++i) {
      EXPECT_TRUE((co_await active.call<echo>("x")).has_value());
      co_await corvid::sleep_for(40ms);  // about time: calls more often than idle_timeout
    }
    auto long_call = co_await active.call<block_reactor>(700);
    EXPECT_EQ(long_call.value_or(-1), 700);
  }());
  EXPECT_TRUE(active.is_connected());
}

}  // namespace
}  // namespace corvid_test
