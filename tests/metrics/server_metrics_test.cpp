// A real server's metrics: calls over loopback, then the exposition (also parsed by
// prometheus_client's own text parser).
#include <atomic>
#include <thread>
#include <vector>

#include "corvid/protocol/function_id.hpp"

#include "exposition.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

int not_registered(int x) { return x; }

std::atomic<bool> gate_open{false};
// A blocking handler that holds its worker until the test opens the gate.
int gated(int x) {
  while (!gate_open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return x;
}

using corvid::test::has_line;
using corvid::test::parse_exposition;

std::string name_of_echo() { return std::string(corvid::protocol::function_name<echo>()); }

void make_calls(const std::string& ep) {
  corvid::sync_wait([](std::string endpoint) -> corvid::task<void> {
    corvid::rpc_client client;
    EXPECT_FALSE(co_await client.connect(endpoint));
    for (int i = 0; i < 3; ++i) EXPECT_TRUE((co_await client.call<echo>("hello")).has_value());
    for (int i = 0; i < 2; ++i) EXPECT_EQ((co_await client.call<add>(1, 2)).value_or(0), 3);
    EXPECT_EQ((co_await client.call<sleepy>(20)).value_or(0), 20);
    EXPECT_FALSE((co_await client.call<fail_always>(1)).has_value());
    EXPECT_FALSE((co_await client.call<not_registered>(1)).has_value());
  }(ep));
}

TEST(server_metrics, counts_calls_errors_latency_and_bytes_per_method) {
  test_server srv;
  make_calls(srv.endpoint());
  const std::string t = srv.server().metrics_text();
  const std::string e = name_of_echo();
  const std::string a(corvid::protocol::function_name<add>());
  const std::string f(corvid::protocol::function_name<fail_always>());
  const std::string s(corvid::protocol::function_name<sleepy>());
  EXPECT_TRUE(has_line(t, "corvid_server_calls_total{method=\"" + e + "\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "corvid_server_calls_total{method=\"" + a + "\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "corvid_server_call_duration_seconds_count{method=\"" + e + "\"} 3"))
      << t;
  // Coroutine calls are timed by their end.
  EXPECT_TRUE(has_line(t, "corvid_server_call_duration_seconds_count{method=\"" + a + "\"} 2"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_server_call_duration_seconds_bucket{method=\"" + s + "\",le=\"0.01\"} 0"))
      << t;  // slept 20 ms
  EXPECT_TRUE(
      has_line(t,
               "corvid_server_call_duration_seconds_bucket{method=\"" + s + "\",le=\"0.025\"} 1") ||
      has_line(t, "corvid_server_call_duration_seconds_bucket{method=\"" + s + "\",le=\"0.05\"} 1"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_server_errors_total{method=\"" + f + "\",code=\"handler_error\"} 1"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_server_errors_total{method=\"(none)\",code=\"function_not_found\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_server_requests_in_flight{method=\"" + e + "\"} 0")) << t;
  // "hello" encodes as a 1-byte length and 5 bytes; each reply frame adds a 32-byte header.
  EXPECT_TRUE(has_line(t, "corvid_server_request_bytes_total{method=\"" + e + "\"} 18")) << t;
  EXPECT_TRUE(has_line(t, "corvid_server_reply_bytes_total{method=\"" + e + "\"} 114")) << t;
  EXPECT_EQ(t.find("corvid_server_errors_total{method=\"" + e + "\""), std::string::npos) << t;
  EXPECT_NE(t.find("corvid_server_memory_bytes{tracker=\"server\"}"), std::string::npos) << t;
}

TEST(server_metrics, connections_by_transport) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  EXPECT_TRUE(eventually([&] {
    return has_line(srv.server().metrics_text(), "corvid_server_connections{transport=\"tcp\"} 1");
  })) << srv.server().metrics_text();
}

TEST(server_metrics, off_records_nothing_per_method) {
  auto cfg = test_server::make_config();
  cfg.metrics = false;
  test_server srv(cfg);
  make_calls(srv.endpoint());
  const std::string t = srv.server().metrics_text();
  EXPECT_EQ(t.find("corvid_server_calls_total{"), std::string::npos) << t;
  EXPECT_NE(t.find("corvid_server_bytes_received_total "), std::string::npos) << t;
}

TEST(server_metrics, worker_queue_depth_and_busy_workers) {
  auto cfg = test_server::make_config();
  cfg.worker_threads = 1;
  cfg.worker_queue_length = 64;  // one connection's share: 8 calls
  corvid::rpc_server server(cfg);
  server.register_blocking_handler<gated>();
  ASSERT_FALSE(server.async_start());
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, "127.0.0.1:" + std::to_string(server.port()))));
  std::vector<corvid::async_reply_t<gated>> replies;
  for (int i = 0; i < 3; ++i) {
    replies.push_back(corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<gated>> {
      co_return co_await client.send_request<gated>(i);
    }()));
  }
  // One call runs on the only worker, two wait in its queue.
  EXPECT_TRUE(eventually([&] {
    const std::string t = server.metrics_text();
    return has_line(t, "corvid_server_worker_queue_depth 2") &&
           has_line(t, "corvid_server_workers{state=\"busy\"} 1");
  })) << server.metrics_text();
  const std::string t = server.metrics_text();
  EXPECT_TRUE(has_line(t, "# TYPE corvid_server_worker_queue_depth gauge")) << t;
  EXPECT_TRUE(has_line(t, "corvid_server_worker_queue_limit 64")) << t;
  EXPECT_TRUE(has_line(t, "corvid_server_workers{state=\"idle\"} 0")) << t;
  gate_open = true;
  for (auto& r : replies) {
    auto v = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
      co_return co_await std::move(r);
    }());
    EXPECT_TRUE(v.has_value());
  }
  EXPECT_TRUE(eventually([&] {
    return has_line(server.metrics_text(), "corvid_server_worker_queue_depth 0");
  })) << server.metrics_text();
  const int rc =
      parse_exposition(server.metrics_text(), std::string(corvid::protocol::function_name<gated>()),
                       " corvid_server_worker_queue_depth=gauge"
                       " corvid_server_worker_queue_bytes=gauge"
                       " corvid_server_workers=gauge");
  EXPECT_TRUE(rc == 0 || rc == 77) << "parse_exposition.py exited " << rc;
}

TEST(server_metrics, exposition_parses_with_prometheus_client) {
  test_server srv;
  make_calls(srv.endpoint());
  const int rc = parse_exposition(srv.server().metrics_text(), name_of_echo());
  if (rc == 77) GTEST_SKIP() << "no python3 with prometheus_client (scripts/setup installs it)";
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace corvid_test
