// dns://name:port against a real dnsmasq the test starts (tests/support/dnsmasq_process.hpp):
// the name's addresses become endpoints, and a change is seen on the next lookup — the
// periodic one, or the one an endpoint's failure brings forward.
#include "discovery_support.hpp"
#include "dnsmasq_process.hpp"

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

}  // namespace
}  // namespace discovery_test
