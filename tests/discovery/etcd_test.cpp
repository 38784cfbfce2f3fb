// Against a real etcd (tests/support/etcd_process.hpp): registration, following, and the
// faults — a server SIGKILLed, a new one, etcd restarted, etcd out of reach, a graceful stop.
#include <atomic>
#include <cstdlib>
#include <thread>

#include "background_quiet.hpp"
#include "discovery/etcd_client.hpp"
#include "discovery_support.hpp"
#include "etcd_process.hpp"
#include "http_client.hpp"
#include "peer_process.hpp"
#include <nlohmann/json.hpp>

namespace discovery_test {
namespace {

using corvid::test::eventually;
using corvid::test::patience;

const std::string prefix = "/services/echo";

TEST(etcd, a_server_registers_its_instance_and_deregisters_on_stop) {
  corvid::test::etcd_process etcd;
  auto cfg = server_config(etcd.url(prefix));
  cfg.instance_id = "echo-1";
  cfg.registry_weight = 3;
  cfg.io_threads = 2;
  auto s = std::make_unique<named_server>("a", cfg);
  corvid::discovery::etcd_client client(etcd.endpoint(), 2000ms);
  corvid::discovery::etcd_range range;
  ASSERT_TRUE(eventually(
      [&] {
        auto r = client.range_prefix(prefix + "/");
        if (r) range = *r;
        return r && range.kvs.size() == 1;
      },
      patience(5s)));
  EXPECT_EQ(range.kvs[0].key, prefix + "/echo-1");
  auto value = nlohmann::json::parse(range.kvs[0].value);
  EXPECT_EQ(value["address"], s->endpoint());
  EXPECT_EQ(value["id"], "echo-1");
  EXPECT_EQ(value["weight"], 3);
  EXPECT_EQ(value["reactors"], 2);
  EXPECT_EQ(value["protocol"], corvid::protocol::current_version);
  // State on /metrics (and /status: the same snapshot).
  EXPECT_TRUE(eventually(
      [&] {
        return s->server().metrics_text().find("corvid_server_registry_registered{registry=\"" +
                                               etcd.url(prefix) + "\"} 1") != std::string::npos;
      },
      patience(5s)))
      << s->server().metrics_text();
  s->server().stop();
  auto after = client.range_prefix(prefix + "/");
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->kvs.empty());  // deleted by stop(), not left to expire
}

TEST(etcd, balancer_follows_servers_that_come_and_go) {
  corvid::test::etcd_process etcd;
  named_server a("a", server_config(etcd.url(prefix)));
  named_server b("b", server_config(etcd.url(prefix)));
  // A neighbour prefix the balancer must not pick up.
  named_server other("other", server_config(etcd.url(prefix + "2")));
  ASSERT_TRUE(eventually(
      [&] {
        auto lb = corvid::sync_wait(corvid::load_balancer::open(etcd.url(prefix)));
        return lb && (*lb)->endpoints().size() == 2;
      },
      patience(5s)));
  auto lb = open_balancer(etcd.url(prefix));
  caller calls(*lb);
  // A new server gets calls within 2 s of registering.
  named_server c("c", server_config(etcd.url(prefix)));
  const auto registered = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return calls.answered_by("c") > 0; }, patience(10s)));
  EXPECT_LE(std::chrono::steady_clock::now() - registered, patience(2s));
  EXPECT_EQ(lb->endpoints().size(), 3u);
  // A graceful stop: deregistered before draining, so no call fails.
  b.server().stop();
  ASSERT_TRUE(eventually([&] { return lb->endpoints().size() == 2; }, patience(5s)));
  const int b_calls = calls.answered_by("b");
  std::this_thread::sleep_for(50ms);  // about time: calls go on meanwhile, none of them to b
  calls.stop();
  EXPECT_EQ(calls.failed(), 0) << calls.last_error();
  EXPECT_EQ(calls.answered_by("b"), b_calls);
  EXPECT_EQ(calls.answered().count("other"), 0u);
}

TEST(etcd, a_sigkilled_server_disappears_within_ttl_and_no_retryable_call_fails) {
  corvid::test::etcd_process etcd;
  constexpr int ttl = 2;  // etcd's smallest lease TTL with its default timing
  corvid::test::peer_process victim(REGISTERED_SERVER_PATH,
                                    {etcd.url(prefix), "victim", std::to_string(ttl)});
  named_server a("a", server_config(etcd.url(prefix)));
  std::shared_ptr<corvid::load_balancer> lb;
  ASSERT_TRUE(eventually(
      [&] {
        lb = open_balancer(etcd.url(prefix));
        return lb->endpoints().size() == 2;
      },
      patience(5s)));
  caller calls(*lb);
  ASSERT_TRUE(eventually([&] { return calls.answered_by("victim") > 0; }, patience(5s)));
  victim.kill();
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return lb->endpoints().size() == 1; }, patience(10s)));
  EXPECT_LE(std::chrono::steady_clock::now() - killed, patience(std::chrono::seconds(ttl + 1)));
  const int before = calls.answered_by("a");
  ASSERT_TRUE(eventually([&] { return calls.answered_by("a") > before + 10; }, patience(5s)));
  calls.stop();
  // Calls in flight on the killed server may fail (connection_closed); none that never
  // reached it may.
  EXPECT_EQ(calls.retryable_failed(), 0) << calls.last_error();
}

TEST(etcd, watches_resume_after_etcd_restarts_and_calls_go_on_meanwhile) {
  corvid::test::etcd_process etcd;
  named_server a("a", server_config(etcd.url(prefix)));
  named_server b("b", server_config(etcd.url(prefix)));
  std::shared_ptr<corvid::load_balancer> lb;
  ASSERT_TRUE(eventually(
      [&] {
        lb = open_balancer(etcd.url(prefix));
        return lb->endpoints().size() == 2;
      },
      patience(5s)));
  const auto known = addresses(*lb);
  caller calls(*lb);
  etcd.kill();  // out of reach: calls go on to the known endpoints
  ASSERT_TRUE(eventually(
      [&] {
        return a.server().metrics_text().find("corvid_server_registry_registered{registry=\"" +
                                              etcd.url(prefix) + "\"} 0") != std::string::npos;
      },
      patience(10s)));
  const int before = calls.answered_by("a") + calls.answered_by("b");
  // etcd stays down for 30 s (the outage is what this test is about; CORVID_TEST_ETCD_OUTAGE
  // sets another length in seconds).
  const char* outage = std::getenv("CORVID_TEST_ETCD_OUTAGE");
  std::this_thread::sleep_for(std::chrono::seconds(outage != nullptr ? std::atoi(outage) : 30));
  EXPECT_GT(calls.answered_by("a") + calls.answered_by("b"), before + 100);
  EXPECT_EQ(addresses(*lb), known);  // never emptied because the registry is down
  etcd.start();
  // The watch resumes: a server registered after the restart appears, one stopped goes,
  // each exactly once.
  named_server c("c", server_config(etcd.url(prefix)));
  ASSERT_TRUE(eventually([&] { return calls.answered_by("c") > 0; }, patience(10s)));
  b.server().stop();
  std::vector<std::string> want{a.endpoint(), c.endpoint()};
  std::sort(want.begin(), want.end());
  ASSERT_TRUE(eventually([&] { return addresses(*lb) == want; }, patience(10s)))
      << ::testing::PrintToString(addresses(*lb));
  calls.stop();
  EXPECT_EQ(calls.failed(), 0) << calls.last_error();
  // The servers registered again on their own.
  EXPECT_TRUE(eventually(
      [&] {
        return a.server().metrics_text().find("corvid_server_registry_registered{registry=\"" +
                                              etcd.url(prefix) + "\"} 1") != std::string::npos;
      },
      patience(10s)));
}

TEST(etcd, the_status_page_shows_the_registration_and_its_state) {
  corvid::test::etcd_process etcd;
  auto cfg = server_config(etcd.url(prefix));
  cfg.instance_id = "shown";
  cfg.http_admin = true;  // /status on the RPC port
  named_server s("s", cfg);
  auto status = [&] {
    return corvid_test::http_get(s.server().port(), "/status");
  };
  ASSERT_TRUE(
      eventually([&] { return status().find("registered") != std::string::npos; }, patience(5s)))
      << status();
  EXPECT_NE(status().find(prefix + "/shown"), std::string::npos);
  etcd.kill();
  EXPECT_TRUE(eventually(
      [&] { return status().find("unreachable (last error: etcd at") != std::string::npos; },
      patience(10s)))
      << status();
}

TEST(etcd, a_server_started_while_etcd_is_down_serves_and_registers_later) {
  corvid::test::etcd_process etcd;
  etcd.kill();
  named_server a("a", server_config(etcd.url(prefix)));
  auto pool = corvid::client_pool::create(a.endpoint());
  auto r = corvid::sync_wait(pool->call<&identity::whoami>());
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "a");
  EXPECT_TRUE(eventually(
      [&] {
        return a.server().metrics_text().find("corvid_server_registry_registered{registry=\"" +
                                              etcd.url(prefix) + "\"} 0") != std::string::npos;
      },
      patience(5s)));
  etcd.start();
  EXPECT_TRUE(eventually(
      [&] {
        auto lb = corvid::sync_wait(corvid::load_balancer::open(etcd.url(prefix)));
        return lb && addresses(**lb) == std::vector<std::string>{a.endpoint()};
      },
      patience(10s)));
}

TEST(etcd, a_watch_from_a_compacted_revision_says_so) {
  corvid::test::etcd_process etcd;
  corvid::discovery::etcd_client client(etcd.endpoint(), 2000ms);
  for (int i = 0; i < 5; ++i) ASSERT_FALSE(client.put("/c/k", std::to_string(i)));
  auto r = client.range_prefix("/c/");
  ASSERT_TRUE(r);
  ASSERT_FALSE(client.compact(r->revision));
  auto end = client.watch_prefix("/c/", 2, [](const auto&, std::int64_t) { return true; });
  EXPECT_EQ(end, corvid::discovery::watch_end::compacted);
}

}  // namespace
}  // namespace discovery_test
