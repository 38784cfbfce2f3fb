// dns://name:port against a real dnsmasq the test starts (tests/support/dnsmasq_process.hpp):
// the name's addresses become endpoints, and a change is seen on the next lookup — the
// periodic one, or the one an endpoint's failure brings forward.
#include <fcntl.h>
#include <unistd.h>

#include "corvid/client/client_metrics.hpp"

#include "background_quiet.hpp"
#include "discovery/endpoint_source.hpp"
#include "discovery_support.hpp"
#include "dnsmasq_process.hpp"
#include <sys/resource.h>

namespace discovery_test {
namespace {

using corvid::test::eventually;
using corvid::test::patience;

// Two servers on one port, at 127.0.0.2 and 127.0.0.3.
struct two_hosts {
  std::unique_ptr<named_server> first, second;
  std::uint16_t port = 0;
  two_hosts() {
    auto c1 = server_config();
    c1.address = "127.0.0.2";
    first = std::make_unique<named_server>("first", c1);
    port = first->server().port();
    auto c2 = server_config();
    c2.address = "127.0.0.3";
    c2.port = port;
    second = std::make_unique<named_server>("second", c2);
  }
};

TEST(dns, a_names_addresses_are_its_endpoints) {
  two_hosts servers;
  corvid::test::dnsmasq_process dns("127.0.0.2 echo.corvid.test\n127.0.0.3 echo.corvid.test\n");
  corvid::lb_config cfg;
  cfg.dns_server = dns.server();
  auto lb = open_balancer("dns://echo.corvid.test:" + std::to_string(servers.port), cfg);
  const std::string p = ":" + std::to_string(servers.port);
  EXPECT_EQ(addresses(*lb), (std::vector<std::string>{"127.0.0.2" + p, "127.0.0.3" + p}));
  EXPECT_EQ(spread(*lb, 20), (std::map<std::string, int>{{"first", 10}, {"second", 10}}));
}

TEST(dns, an_unknown_name_is_an_error_at_open) {
  corvid::test::dnsmasq_process dns("127.0.0.2 echo.corvid.test\n");
  corvid::lb_config cfg;
  cfg.dns_server = dns.server();
  auto lb = corvid::sync_wait(corvid::load_balancer::open("dns://nothing.corvid.test:9000", cfg));
  ASSERT_FALSE(lb);
  EXPECT_NE(lb.error().message().find("nothing.corvid.test"), std::string::npos);
}

TEST(dns, the_name_is_resolved_again_periodically) {
  two_hosts servers;
  corvid::test::dnsmasq_process dns("127.0.0.2 echo.corvid.test\n");
  corvid::lb_config cfg;
  cfg.dns_server = dns.server();
  cfg.dns_refresh_interval = 100ms;
  auto lb = open_balancer("dns://echo.corvid.test:" + std::to_string(servers.port), cfg);
  EXPECT_EQ(lb->endpoints().size(), 1u);
  dns.reload("127.0.0.2 echo.corvid.test\n127.0.0.3 echo.corvid.test\n");
  EXPECT_TRUE(eventually([&] { return lb->endpoints().size() == 2; }, patience(5s)));
}

TEST(dns, a_failed_endpoint_brings_the_next_lookup_forward) {
  two_hosts servers;
  corvid::test::dnsmasq_process dns("127.0.0.2 echo.corvid.test\n");
  corvid::lb_config cfg;
  cfg.dns_server = dns.server();
  cfg.dns_refresh_interval = std::chrono::hours(1);  // only a failure makes it look again
  auto lb = open_balancer("dns://echo.corvid.test:" + std::to_string(servers.port), cfg);
  dns.reload("127.0.0.3 echo.corvid.test\n");  // the name moves to the second server
  servers.first.reset();                       // and the first goes away
  // The failed calls trigger a lookup; calls land on the second server.
  EXPECT_TRUE(eventually([&] { return spread(*lb, 1).count("second") == 1; }, patience(10s)));
  const std::string p = ":" + std::to_string(servers.port);
  EXPECT_EQ(addresses(*lb), std::vector<std::string>{"127.0.0.3" + p});
}

// Descriptors past FD_SETSIZE (1024): a lookup must not depend on select().
class many_descriptors {
 public:
  explicit many_descriptors(int count) {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    saved_ = lim;
    if (lim.rlim_cur < static_cast<rlim_t>(count) + 256) {
      lim.rlim_cur = std::min<rlim_t>(static_cast<rlim_t>(count) + 256, lim.rlim_max);
      ::setrlimit(RLIMIT_NOFILE, &lim);
    }
    for (int i = 0; i < count; ++i) {
      const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      fds_.push_back(fd);
    }
  }
  ~many_descriptors() {
    for (int fd : fds_) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  int highest() const { return fds_.empty() ? -1 : fds_.back(); }

 private:
  rlimit saved_{};
  std::vector<int> fds_;
};

TEST(dns, a_lookup_works_in_a_process_holding_more_than_1024_descriptors) {
  corvid::test::dnsmasq_process dns("127.0.0.2 echo.corvid.test\n");
  many_descriptors held(1100);
  ASSERT_GT(held.highest(), 1100) << "RLIMIT_NOFILE's hard limit is too low for this test";
  corvid::lb_config cfg;
  cfg.dns_server = dns.server();
  auto lb = corvid::sync_wait(corvid::load_balancer::open("dns://echo.corvid.test:9000", cfg));
  ASSERT_TRUE(lb) << lb.error().message();
  EXPECT_EQ(addresses(**lb), std::vector<std::string>{"127.0.0.2:9000"});
}

TEST(dns, the_url_s_port_must_be_a_number_1_to_65535) {
  corvid::test::dnsmasq_process dns("127.0.0.2 echo.corvid.test\n");
  corvid::lb_config cfg;
  cfg.dns_server = dns.server();
  for (const char* url : {"dns://echo.corvid.test:99999", "dns://echo.corvid.test:0",
                          "dns://echo.corvid.test:http"}) {
    auto lb = corvid::sync_wait(corvid::load_balancer::open(url, cfg));
    ASSERT_FALSE(lb) << url;
    EXPECT_EQ(lb.error().code(), corvid::rpc_errc::invalid_argument) << url;
  }
}

TEST(dns, at_most_max_endpoints_addresses_are_used) {
  std::string hosts;
  for (int i = 1; i <= 10; ++i) hosts += "127.0.1." + std::to_string(i) + " echo.corvid.test\n";
  corvid::test::dnsmasq_process dns(hosts);
  auto metrics = std::make_shared<corvid::client_metrics>();
  corvid::lb_config cfg;
  cfg.dns_server = dns.server();
  cfg.max_endpoints = 4;
  cfg.pool.client.metrics = metrics;
  std::vector<corvid::lb_endpoint> got;
  auto source = corvid::discovery::open_source(
      "dns://echo.corvid.test:9000", cfg, [&](std::vector<corvid::lb_endpoint> e) { got = e; });
  ASSERT_TRUE(source) << source.error().message();
  EXPECT_EQ(got.size(), 4u);
  EXPECT_NE(
      metrics->prometheus_text().find("corvid_discovery_rejected_total{reason=\"over_limit\"} 6\n"),
      std::string::npos)
      << metrics->prometheus_text();
}

}  // namespace
}  // namespace discovery_test
