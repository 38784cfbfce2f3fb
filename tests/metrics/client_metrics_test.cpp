// Client metrics (client_config::metrics): calls, errors, latency, bytes and in-flight per
// method; connects; pool and balancer counters; the exposition, alone and on a server's
// /metrics (also parsed by prometheus_client's own text parser).
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "corvid/protocol/function_id.hpp"

#include "background_quiet.hpp"
#include "exposition.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

using corvid::test::has_line;
using corvid::test::parse_exposition;

int not_registered(int x) { return x; }

template <auto F>
std::string name() {
  return std::string(corvid::protocol::function_name<F>());
}

std::uint16_t unused_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

// The value of the sample starting with `prefix` (name and labels), 0 if absent.
double value_of(const std::string& text, const std::string& prefix) {
  const auto at = text.find("\n" + prefix);
  return at == std::string::npos ? 0 : std::stod(text.substr(at + 1 + prefix.size()));
}

corvid::client_config metered(const std::shared_ptr<corvid::client_metrics>& m) {
  corvid::client_config cfg;
  cfg.metrics = m;
  return cfg;
}

TEST(client_metrics, ok_calls_count_calls_bytes_and_latency_as_the_server_does) {
  test_server srv;
  auto m = std::make_shared<corvid::client_metrics>();
  corvid::rpc_client client(metered(m));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(corvid::sync_wait([&]() -> corvid::task<bool> {
      co_return (co_await client.call<echo>("hello")).has_value();
    }()));
  }
  const std::string t = m->prometheus_text();
  const std::string e = name<echo>();
  EXPECT_TRUE(has_line(t, "corvid_client_calls_total{method=\"" + e + "\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_call_duration_seconds_count{method=\"" + e + "\"} 3"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_client_call_duration_seconds_bucket{method=\"" + e + "\",le=\"+Inf\"} 3"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_client_calls_in_flight{method=\"" + e + "\"} 0")) << t;
  // The server's numbers for the same calls (server_metrics_test): "hello" is 6 bytes of
  // arguments; each reply frame is a 32-byte header and the 6-byte result.
  EXPECT_TRUE(has_line(t, "corvid_client_request_bytes_total{method=\"" + e + "\"} 18")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_reply_bytes_total{method=\"" + e + "\"} 114")) << t;
  EXPECT_EQ(t.find("corvid_client_call_errors_total{"), std::string::npos) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_connects_total{result=\"ok\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_connections 1")) << t;
  EXPECT_TRUE(has_line(srv.server().metrics_text(),
                       "corvid_server_reply_bytes_total{method=\"" + e + "\"} 114"));
}

TEST(client_metrics, function_not_found_is_an_error_of_its_method) {
  test_server srv;
  auto m = std::make_shared<corvid::client_metrics>();
  corvid::rpc_client client(metered(m));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call<not_registered>(1);
  }());
  ASSERT_FALSE(r.has_value());
  const std::string t = m->prometheus_text();
  const std::string n = name<not_registered>();
  EXPECT_TRUE(has_line(t, "corvid_client_calls_total{method=\"" + n + "\"} 1")) << t;
  EXPECT_TRUE(has_line(
      t, "corvid_client_call_errors_total{method=\"" + n + "\",code=\"function_not_found\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_client_call_duration_seconds_count{method=\"" + n + "\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_client_reply_bytes_total{method=\"" + n + "\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_request_bytes_total{method=\"" + n + "\"} 4"))
      << t;  // the int argument
}

TEST(client_metrics, a_timeout_is_timed_at_its_deadline) {
  test_server srv;
  auto m = std::make_shared<corvid::client_metrics>();
  corvid::rpc_client client(metered(m));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call_for<sleepy>(30ms, 300);
  }());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout);
  const std::string t = m->prometheus_text();
  const std::string s = name<sleepy>();
  EXPECT_TRUE(
      has_line(t, "corvid_client_call_errors_total{method=\"" + s + "\",code=\"timeout\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_client_call_duration_seconds_count{method=\"" + s + "\"} 1"))
      << t;
  // Ended at its 30 ms deadline, not before.
  EXPECT_TRUE(has_line(
      t, "corvid_client_call_duration_seconds_bucket{method=\"" + s + "\",le=\"0.025\"} 0"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_client_calls_in_flight{method=\"" + s + "\"} 0")) << t;
}

TEST(client_metrics, calls_are_in_flight_from_submission_to_result) {
  test_server srv;
  auto m = std::make_shared<corvid::client_metrics>();
  corvid::rpc_client client(metered(m));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  const std::string s = name<sleepy>();
  auto reply = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<sleepy>> {
    co_return co_await client.send_request<sleepy>(100);
  }());
  std::string t = m->prometheus_text();
  EXPECT_TRUE(has_line(t, "corvid_client_calls_in_flight{method=\"" + s + "\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_call_duration_seconds_count{method=\"" + s + "\"} 0"))
      << t;
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await std::move(reply);
  }());
  EXPECT_EQ(r.value_or(0), 100);
  t = m->prometheus_text();
  EXPECT_TRUE(has_line(t, "corvid_client_calls_in_flight{method=\"" + s + "\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_call_duration_seconds_count{method=\"" + s + "\"} 1"))
      << t;
}

TEST(client_metrics, refused_calls_and_failed_connects_count_and_outlive_their_client) {
  auto m = std::make_shared<corvid::client_metrics>();
  {
    corvid::rpc_client client(metered(m));
    EXPECT_TRUE(corvid::sync_wait(
        connect(client, "127.0.0.1:" + std::to_string(unused_port()))));  // refused
    auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
      co_return co_await client.call<sleepy>(1);  // not connected: ends at once
    }());
    EXPECT_FALSE(r.has_value());
  }
  // The client is gone: its counts were folded into the totals.
  const std::string t = m->prometheus_text();
  const std::string s = name<sleepy>();
  EXPECT_TRUE(has_line(t, "corvid_client_connects_total{result=\"failed\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_connects_total{result=\"ok\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_connections 0")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_calls_total{method=\"" + s + "\"} 1")) << t;
  EXPECT_TRUE(has_line(
      t, "corvid_client_call_errors_total{method=\"" + s + "\",code=\"connection_closed\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_client_call_duration_seconds_count{method=\"" + s + "\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_client_request_bytes_total{method=\"" + s + "\"} 0")) << t;
}

TEST(client_metrics, pool_counts_its_connects_and_connections_by_endpoint) {
  test_server srv;
  auto m = std::make_shared<corvid::client_metrics>();
  corvid::pool_config pc;
  pc.client.metrics = m;
  pc.reconnect_backoff_initial = 10s;  // one failed attempt, then calls fail at once
  const std::string dead = "127.0.0.1:" + std::to_string(unused_port());
  auto good = corvid::client_pool::create(srv.endpoint(), pc);
  auto bad = corvid::client_pool::create(dead, pc);
  EXPECT_EQ(corvid::sync_wait(good->call<echo>("x")).value_or(""), "x");
  EXPECT_FALSE(corvid::sync_wait(bad->call<echo>("x")).has_value());
  EXPECT_FALSE(corvid::sync_wait(bad->call<echo>("x")).has_value());  // in its back-off
  const std::string t = m->prometheus_text();
  const std::string g = srv.endpoint();
  EXPECT_TRUE(has_line(t, "corvid_pool_connections{endpoint=\"" + g + "\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "corvid_pool_connections{endpoint=\"" + dead + "\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "corvid_pool_connects_total{endpoint=\"" + g + "\",result=\"ok\"} 1"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_pool_connects_total{endpoint=\"" + dead + "\",result=\"failed\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_pool_retries_total{endpoint=\"" + g + "\"} 0")) << t;
  // The pools' connections are clients reporting too.
  EXPECT_TRUE(has_line(t, "corvid_client_connects_total{result=\"failed\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_calls_total{method=\"" + name<echo>() + "\"} 1")) << t;
  good.reset();  // its connection closes with it
  EXPECT_TRUE(has_line(m->prometheus_text(), "corvid_pool_connections{endpoint=\"" + g + "\"} 0"))
      << m->prometheus_text();
}

TEST(client_metrics, balancer_counts_an_ejection_by_endpoint) {
  test_server srv;
  auto m = std::make_shared<corvid::client_metrics>();
  corvid::lb_config cfg;
  cfg.pool.client.metrics = m;
  cfg.eject_base = 10s;
  const std::string dead = "127.0.0.1:" + std::to_string(unused_port());
  auto lb = corvid::load_balancer::create({{srv.endpoint()}, {dead}}, cfg);
  int failed = 0;
  for (int i = 0; i < 10; ++i) {
    if (!corvid::sync_wait(lb->call<echo>("x")).has_value()) ++failed;
  }
  // Round robin routes the first call to the dead endpoint; it never left, so the balancer
  // sends it again to the live one (and ejects the dead one).
  EXPECT_EQ(failed, 0);
  const std::string t = m->prometheus_text();
  EXPECT_TRUE(has_line(t, "corvid_lb_ejections_total{endpoint=\"" + dead + "\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "corvid_lb_failures_total{endpoint=\"" + dead + "\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "corvid_lb_ejections_total{endpoint=\"" + srv.endpoint() + "\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_calls_total{method=\"" + name<echo>() + "\"} 10")) << t;
  const int rc = parse_exposition(t, name<echo>(),
                                  " corvid_pool_connections=gauge corvid_pool_connects=counter"
                                  " corvid_pool_retries=counter corvid_pool_closed=counter"
                                  " corvid_lb_ejections=counter corvid_lb_failures=counter",
                                  " --client");
  EXPECT_TRUE(rc == 0 || rc == 77) << "parse_exposition.py exited " << rc;
}

// Registry churn: endpoints that come and go leave /metrics once nothing follows them, and
// the series of endpoints still followed are bounded (the rest share endpoint="other").
TEST(client_metrics, endpoint_series_leave_once_unused_and_are_capped) {
  auto m = std::make_shared<corvid::client_metrics>(50ms, 8);
  corvid::lb_config cfg;
  cfg.pool.client.metrics = m;
  cfg.follow_health = false;
  cfg.pool.idle_timeout = 0ms;
  auto lb = corvid::load_balancer::create({}, cfg);
  auto series = [&] {
    const std::string t = m->prometheus_text();
    std::size_t n = 0;
    for (std::size_t at = t.find("\ncorvid_lb_failures_total{"); at != std::string::npos;
         at = t.find("\ncorvid_lb_failures_total{", at + 1)) {
      ++n;
    }
    return n;
  };
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(lb->add_endpoint({"127.0.0.2:" + std::to_string(20000 + round * 10 + i)}));
    }
    EXPECT_LE(series(), 9u) << "8 endpoints and \"other\"";
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(lb->remove_endpoint("127.0.0.2:" + std::to_string(20000 + round * 10 + i)));
    }
  }
  EXPECT_TRUE(has_line(m->prometheus_text(), "corvid_lb_failures_total{endpoint=\"other\"} 0"));
  // Nothing is followed now: after the linger every endpoint's series is gone, the pools'
  // too (each node's pool goes with it).
  EXPECT_TRUE(eventually(
      [&] {
        const std::string t = m->prometheus_text();
        return series() == 0 && t.find("corvid_pool_connects_total{") == std::string::npos;
      },
      10s))
      << m->prometheus_text();
}

TEST(client_metrics, a_server_shows_its_client_metrics_on_one_scrape) {
  auto m = std::make_shared<corvid::client_metrics>();
  test_server backend;
  auto cfg = test_server::make_config();
  cfg.client_metrics = m;
  test_server front(cfg);
  corvid::rpc_client client(metered(m));
  ASSERT_FALSE(corvid::sync_wait(connect(client, backend.endpoint())));
  EXPECT_EQ(corvid::sync_wait([&]() -> corvid::task<std::string> {
              co_return (co_await client.call<echo>("hi")).value_or("");
            }()),
            "hi");
  const std::string t = front.server().metrics_text();
  EXPECT_NE(t.find("# TYPE corvid_server_calls_total counter"), std::string::npos) << t;
  EXPECT_TRUE(has_line(t, "corvid_client_calls_total{method=\"" + name<echo>() + "\"} 1")) << t;
  const int rc = parse_exposition(t, name<echo>(), "", " --client");
  if (rc == 77) GTEST_SKIP() << "no python3 with prometheus_client (scripts/setup installs it)";
  EXPECT_EQ(rc, 0);
}

// Callers on several threads, connections coming and going, and scrapes meanwhile: no data
// race (TSan), no count lost, and a scrape never shows more ended calls than calls.
TEST(client_metrics, scrapes_while_calls_run_and_connections_retire) {
  test_server srv;
  auto m = std::make_shared<corvid::client_metrics>();
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    const std::string labels = "{method=\"" + name<echo>() + "\"} ";
    while (!done.load()) {
      const std::string t = m->prometheus_text();
      EXPECT_LE(value_of(t, "corvid_client_call_duration_seconds_count" + labels),
                value_of(t, "corvid_client_calls_total" + labels));
    }
  });
  auto work = [&] {
    for (int round = 0; round < 5; ++round) {
      corvid::rpc_client client(metered(m));  // retired at the end of each round
      ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
      corvid::sync_wait([&]() -> corvid::task<void> {
        for (int i = 0; i < 40; ++i) {
          EXPECT_TRUE((co_await client.call<echo>("x")).has_value());
          EXPECT_EQ((co_await client.call<add>(i, 1)).value_or(0), i + 1);
        }
      }());
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  done = true;
  scraper.join();
  const std::string t = m->prometheus_text();
  for (const std::string& n : {name<echo>(), name<add>()}) {
    EXPECT_TRUE(has_line(t, "corvid_client_calls_total{method=\"" + n + "\"} 400")) << t;
    EXPECT_TRUE(has_line(t, "corvid_client_call_duration_seconds_count{method=\"" + n + "\"} 400"))
        << t;
    EXPECT_TRUE(has_line(t, "corvid_client_calls_in_flight{method=\"" + n + "\"} 0")) << t;
  }
  EXPECT_TRUE(has_line(t, "corvid_client_connects_total{result=\"ok\"} 10")) << t;
}

TEST(client_metrics, off_by_default) {
  EXPECT_EQ(corvid::client_config{}.metrics, nullptr);
  EXPECT_EQ(corvid::server_config{}.client_metrics, nullptr);
}

}  // namespace
}  // namespace corvid_test
