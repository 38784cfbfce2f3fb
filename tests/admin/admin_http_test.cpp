// The admin endpoints on the RPC port (server_config::http_admin): what they answer, and
// that hostile HTTP peers get a 4xx and a close while the RPC connections keep being served.
#include <atomic>
#include <future>
#include <vector>

#include "corvid/protocol/function_id.hpp"

#include "admin/admin_host.hpp"
#include "http_client.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

corvid::server_config admin_config() {
  auto c = test_server::make_config();
  c.http_admin = true;
  return c;
}

void call_echo(corvid::rpc_client& client, int n = 1) {
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (int i = 0; i < n; ++i) EXPECT_TRUE((co_await client.call<echo>("hi")).has_value());
  }());
}

TEST(admin_http, metrics_health_status_and_connections_on_the_rpc_port) {
  test_server srv(admin_config());
  corvid::rpc_client client;  // a corvid client on the same port
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  call_echo(client, 2);
  const std::string echo_name(corvid::protocol::function_name<echo>());

  const std::string m = http_get(srv.port(), "/metrics");
  EXPECT_EQ(status_of(m), 200) << m;
  EXPECT_NE(m.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << m;
  EXPECT_NE(m.find("corvid_server_calls_total{method=\"" + echo_name + "\"} 2\n"),
            std::string::npos)
      << m;

  const std::string h = http_get(srv.port(), "/health");
  EXPECT_EQ(status_of(h), 200);
  EXPECT_EQ(body_of(h), "ok\n");
  const std::string head = http_get(srv.port(), "/health", "HEAD");
  EXPECT_EQ(status_of(head), 200);
  EXPECT_EQ(body_of(head), "");
  EXPECT_NE(head.find("Content-Length: 3\r\n"), std::string::npos) << head;

  const std::string st = http_get(srv.port(), "/status");
  EXPECT_EQ(status_of(st), 200);
  EXPECT_NE(st.find("<tr class=\"method\" data-method=\"" + echo_name + "\">"), std::string::npos)
      << st;
  EXPECT_NE(st.find("<tr class=\"connection\""), std::string::npos) << st;

  const std::string cj = http_get(srv.port(), "/connections?format=json");
  EXPECT_EQ(status_of(cj), 200);
  EXPECT_NE(cj.find("\"transport\": \"tcp\""), std::string::npos) << cj;
  EXPECT_NE(cj.find("\"calls\": 2"), std::string::npos) << cj;
  EXPECT_NE(http_get(srv.port(), "/connections").find(" tcp "), std::string::npos);

  EXPECT_EQ(status_of(http_get(srv.port(), "/nope")), 404);
  call_echo(client);  // the RPC connection is unaffected
}

TEST(admin_http, off_by_default_an_http_request_is_a_protocol_error) {
  test_server srv;
  const std::string r = http_get(srv.port(), "/metrics");
  EXPECT_EQ(r.find("HTTP/1.1"), std::string::npos) << r;
}

TEST(admin_http, separate_admin_address) {
  auto cfg = test_server::make_config();
  cfg.admin_address = "127.0.0.1:0";
  test_server srv(cfg);
  ASSERT_NE(srv.server().admin_port(), 0);
  ASSERT_NE(srv.server().admin_port(), srv.port());
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  call_echo(client, 3);
  const std::string m = http_get(srv.server().admin_port(), "/metrics");
  EXPECT_EQ(status_of(m), 200) << m;
  EXPECT_NE(m.find("corvid_server_calls_total{method=\"" +
                   std::string(corvid::protocol::function_name<echo>()) + "\"} 3\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("corvid_server_connections{transport=\"tcp\"} 1\n"), std::string::npos) << m;
  EXPECT_EQ(status_of(http_get(srv.server().admin_port(), "/health")), 200);
  // The RPC port itself does not answer HTTP (http_admin is off).
  EXPECT_EQ(http_get(srv.port(), "/metrics").find("HTTP/1.1"), std::string::npos);
}

// A service calling another: its clients' metrics on the same /metrics page as its own.
TEST(admin_http, metrics_page_shows_the_servers_client_metrics_too) {
  auto client_metrics = std::make_shared<corvid::client_metrics>();
  auto cfg = admin_config();
  cfg.client_metrics = client_metrics;
  test_server srv(cfg);
  corvid::client_config cc;
  cc.metrics = client_metrics;
  corvid::rpc_client client(cc);
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  call_echo(client, 2);
  const std::string echo_name(corvid::protocol::function_name<echo>());
  const std::string m = http_get(srv.port(), "/metrics");
  EXPECT_NE(m.find("corvid_server_calls_total{method=\"" + echo_name + "\"} 2\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("corvid_client_calls_total{method=\"" + echo_name + "\"} 2\n"),
            std::string::npos)
      << m;
}

TEST(admin_http, connection_bytes_are_counted_with_coalescing_off_too) {
  auto cfg = admin_config();
  cfg.coalesce_writes = false;  // one blocking write per reply, not the write completion
  test_server srv(cfg);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  call_echo(client, 2);
  const std::string cj = http_get(srv.port(), "/connections?format=json");
  EXPECT_NE(cj.find("\"calls\": 2"), std::string::npos) << cj;
  EXPECT_EQ(cj.find("\"bytes_sent\": 0,"), std::string::npos) << cj;
  EXPECT_EQ(cj.find("\"bytes_received\": 0,"), std::string::npos) << cj;
}

TEST(admin_http, bad_admin_address_fails_start) {
  for (const char* bad : {"127.0.0.1", "nohost:80", "127.0.0.1:99999", "127.0.0.1:x"}) {
    auto cfg = test_server::make_config();
    cfg.admin_address = bad;
    corvid::rpc_server server(cfg);
    const auto ec = server.async_start();
    EXPECT_EQ(ec.code(), corvid::rpc_errc::invalid_argument) << bad << ": " << ec.message();
  }
}

TEST(admin_http, malformed_and_oversized_requests_get_4xx_and_a_close) {
  test_server srv(admin_config());
  {
    http_socket s(srv.port());
    s.send("GET /metrics HTTP/1.1\r\n\x01\x02garbage\xff\r\n\r\n");
    EXPECT_EQ(status_of(s.read_all()), 400);
  }
  {
    http_socket s(srv.port());
    s.send("GET /metrics HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a'));
    EXPECT_EQ(status_of(s.read_all()), 431);
  }
  {
    http_socket s(srv.port());
    s.send("GET /metrics HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789");
    EXPECT_EQ(status_of(s.read_all()), 400);
  }
  EXPECT_EQ(status_of(http_get(srv.port(), "/metrics", "HEAD")), 200);
  EXPECT_EQ(status_of(http_get(srv.port(), "/metrics", "GETX")), 405);
}

TEST(admin_http, slow_sender_is_cut_off_by_frame_read_timeout) {
  auto cfg = admin_config();
  cfg.frame_read_timeout = std::chrono::milliseconds(300);
  test_server srv(cfg);
  http_socket s(srv.port());
  const auto start = std::chrono::steady_clock::now();
  s.send("GET /metrics HTTP/1.1\r\n");
  for (int i = 0; i < 3; ++i) {         // a header byte now and then: never complete
    std::this_thread::sleep_for(50ms);  // about time: the attack is its pace
    s.send("X");
  }
  const std::string r = s.read_all();
  EXPECT_EQ(status_of(r), 408) << r;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(admin_http, many_idle_admin_connections_leave_rpc_served) {
  auto cfg = admin_config();
  cfg.frame_read_timeout = std::chrono::milliseconds(1000);  // the idle ones then get 408
  test_server srv(cfg);
  std::vector<std::unique_ptr<http_socket>> idle;
  for (int i = 0; i < 40; ++i) {
    idle.push_back(std::make_unique<http_socket>(srv.port(), 2));
    idle.back()->send("GET /metr");  // handed to the admin side, never completed
  }
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  call_echo(client, 100);
  // Past one address's share of the sessions the extra ones were answered 503 at once.
  const int share = static_cast<int>(corvid::admin::max_admin_sessions_per_peer);
  int refused = 0, timed_out = 0;
  for (auto& s : idle) {
    const int status = status_of(s->read_all());
    refused += status == 503 ? 1 : 0;
    timed_out += status == 408 ? 1 : 0;
  }
  EXPECT_EQ(refused, 40 - share);
  EXPECT_EQ(timed_out, share);
  idle.clear();
  EXPECT_TRUE(eventually([&] { return status_of(http_get(srv.port(), "/health")) == 200; }));
}

TEST(admin_http, health_is_503_while_stopping) {
  test_server srv(admin_config());
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  http_socket s(srv.port());
  s.send("GET /health HTTP/1.1\r\n");  // handed to the admin side; the rest comes later
  // A call in flight keeps the stop draining for a while.
  sleepy_started = 0;
  auto slow = std::async(std::launch::async, [&] {
    return corvid::sync_wait([&]() -> corvid::task<int> {
      co_return (co_await client.call<sleepy>(1500)).value_or(-1);
    }());
  });
  ASSERT_TRUE(eventually([] { return sleepy_started == 1; }));
  corvid::rpc_client other;
  ASSERT_FALSE(corvid::sync_wait(connect(other, srv.endpoint())));
  auto stopper = std::async(std::launch::async, [&] { srv.server().stop(); });
  // The stop has begun once a draining connection refuses a new call.
  EXPECT_TRUE(eventually([&] {
    return !corvid::sync_wait([&]() -> corvid::task<bool> {
      co_return (co_await other.call<echo>("x")).has_value();
    }());
  }));
  s.send("\r\n");
  const std::string r = s.read_all();
  EXPECT_EQ(status_of(r), 503) << r;
  EXPECT_EQ(slow.get(), 1500);
  stopper.get();
}

}  // namespace
}  // namespace corvid_test
