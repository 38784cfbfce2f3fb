// What the client reads from a registry is outside input: etcd values that describe no
// instance, addresses that cannot be dialled, values too large, more keys than a client
// follows. Each is rejected (counted as corvid_discovery_rejected_total{reason}, written
// once), the rest keeps working, and no exception ends the process from a source's thread.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "corvid/client/client_metrics.hpp"

#include "background_quiet.hpp"
#include "discovery/endpoint_source.hpp"
#include "discovery/etcd_client.hpp"
#include "discovery_support.hpp"
#include "etcd_process.hpp"

namespace discovery_test {
namespace {

using corvid::test::eventually;
using corvid::test::patience;

const std::string prefix = "/services/echo";

std::string rejected_line(const std::string& reason, int n) {
  return "corvid_discovery_rejected_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
}

// What an endpoint source hands over, as the balancer would receive it.
class handed_over {
 public:
  corvid::discovery::endpoints_callback callback() {
    return [this](std::vector<corvid::lb_endpoint> e) {
      std::lock_guard lk(mutex_);
      last_ = std::move(e);
      ++updates_;
    };
  }
  std::vector<std::string> addresses() {
    std::lock_guard lk(mutex_);
    std::vector<std::string> out;
    for (const auto& e : last_) out.push_back(e.address);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::size_t size() {
    std::lock_guard lk(mutex_);
    return last_.size();
  }

 private:
  std::mutex mutex_;
  std::vector<corvid::lb_endpoint> last_;
  int updates_ = 0;
};

std::string instance(const std::string& address, const std::string& id) {
  return "{\"id\":\"" + id + "\",\"address\":\"" + address + "\"}";
}

TEST(registry_input, bad_values_in_etcd_are_rejected_while_a_balancer_follows_and_calls_go_on) {
  corvid::test::etcd_process etcd;
  named_server a("a", server_config(etcd.url(prefix)));
  auto metrics = std::make_shared<corvid::client_metrics>();
  corvid::lb_config cfg;
  cfg.pool.client.metrics = metrics;
  std::shared_ptr<corvid::load_balancer> lb;
  ASSERT_TRUE(eventually(
      [&] {
        lb = open_balancer(etcd.url(prefix), cfg);
        return lb->endpoints().size() == 1;
      },
      patience(5s)));
  caller calls(*lb);
  ASSERT_TRUE(eventually([&] { return calls.answered_by("a") > 0; }, patience(5s)));
  corvid::discovery::etcd_client client(etcd.endpoint(), 2000ms);
  // Written while the balancer's watch follows the prefix: each arrives as a watch event.
  ASSERT_FALSE(client.put(prefix + "/int-id", R"({"id": 7, "address": "127.0.0.1:9000"})"));
  ASSERT_FALSE(client.put(prefix + "/weight", R"({"address": "127.0.0.1:9000", "weight": -1})"));
  ASSERT_FALSE(client.put(prefix + "/text", "not json"));
  ASSERT_FALSE(client.put(prefix + "/array", "[1, 2]"));
  ASSERT_FALSE(client.put(prefix + "/empty", R"({"address": ""})"));
  ASSERT_FALSE(client.put(prefix + "/no-port", R"({"address": "no-port"})"));
  ASSERT_FALSE(client.put(prefix + "/big-port", R"({"address": "127.0.0.1:99999"})"));
  ASSERT_FALSE(client.put(prefix + "/unix", R"({"address": "unix:"})"));
  const std::string good = "127.0.0.2:9";  // nothing listens there: it never answers
  ASSERT_FALSE(client.put(prefix + "/good", instance(good, "good")));
  ASSERT_TRUE(eventually(
      [&] {
        const std::string t = metrics->prometheus_text();
        return t.find(rejected_line("bad_field", 2)) != std::string::npos &&
               t.find(rejected_line("not_json", 2)) != std::string::npos &&
               t.find(rejected_line("bad_address", 4)) != std::string::npos;
      },
      patience(5s)))
      << metrics->prometheus_text();
  // Only the instances that may be dialled are followed; calls never stopped.
  ASSERT_TRUE(eventually([&] { return lb->endpoints().size() == 2; }, patience(5s)));
  EXPECT_EQ(stats_of(*lb, good).address, good);
  const int before = calls.answered_by("a");
  ASSERT_TRUE(eventually([&] { return calls.answered_by("a") > before + 10; }, patience(5s)));
  // A valid value for a rejected key is taken.
  ASSERT_FALSE(client.put(prefix + "/int-id", instance("127.0.0.2:10", "fixed")));
  EXPECT_TRUE(eventually([&] { return lb->endpoints().size() == 3; }, patience(5s)));
  calls.stop();
  EXPECT_EQ(calls.failed(), 0) << calls.last_error();
}

TEST(registry_input, bad_values_present_at_open_are_rejected_by_the_first_read) {
  corvid::test::etcd_process etcd;
  corvid::discovery::etcd_client client(etcd.endpoint(), 2000ms);
  ASSERT_FALSE(client.put(prefix + "/a", instance("127.0.0.2:1", "a")));
  ASSERT_FALSE(client.put(prefix + "/bad", R"({"id": 7, "address": "127.0.0.1:9000"})"));
  ASSERT_FALSE(client.put(prefix + "/port", R"({"address": "127.0.0.1:0"})"));
  auto metrics = std::make_shared<corvid::client_metrics>();
  corvid::lb_config cfg;
  cfg.pool.client.metrics = metrics;
  handed_over got;
  auto source = corvid::discovery::open_source(etcd.url(prefix), cfg, got.callback());
  ASSERT_TRUE(source) << source.error().message();
  EXPECT_EQ(got.addresses(), std::vector<std::string>{"127.0.0.2:1"});
  const std::string t = metrics->prometheus_text();
  EXPECT_NE(t.find(rejected_line("bad_field", 1)), std::string::npos) << t;
  EXPECT_NE(t.find(rejected_line("bad_address", 1)), std::string::npos) << t;
}

TEST(registry_input, values_of_a_mebibyte_neither_break_open_nor_the_watch) {
  corvid::test::etcd_process etcd;
  corvid::discovery::etcd_client client(etcd.endpoint(), 5000ms);
  const std::string mebibyte(1 << 20, 'x');
  for (int i = 0; i < 60; ++i) {
    ASSERT_FALSE(client.put(prefix + "/big-" + std::to_string(100 + i), mebibyte));
  }
  ASSERT_FALSE(client.put(prefix + "/a", instance("127.0.0.2:1", "a")));
  auto metrics = std::make_shared<corvid::client_metrics>();
  corvid::lb_config cfg;
  cfg.pool.client.metrics = metrics;
  handed_over got;
  auto source = corvid::discovery::open_source(etcd.url(prefix), cfg, got.callback());
  ASSERT_TRUE(source) << source.error().message();
  EXPECT_EQ(got.addresses(), std::vector<std::string>{"127.0.0.2:1"});
  EXPECT_NE(metrics->prometheus_text().find(rejected_line("too_large", 60)), std::string::npos)
      << metrics->prometheus_text();
  // Large values through the watch: rejected, and the watch goes on.
  for (int i = 0; i < 20; ++i) {
    ASSERT_FALSE(client.put(prefix + "/later-" + std::to_string(i), mebibyte));
  }
  ASSERT_FALSE(client.put(prefix + "/b", instance("127.0.0.2:2", "b")));
  EXPECT_TRUE(eventually(
      [&] {
        return got.addresses() == std::vector<std::string>{"127.0.0.2:1", "127.0.0.2:2"};
      },
      patience(10s)));
  EXPECT_NE(metrics->prometheus_text().find(rejected_line("too_large", 80)), std::string::npos)
      << metrics->prometheus_text();
}

TEST(registry_input, a_source_holds_at_most_twice_max_endpoints_keys) {
  corvid::test::etcd_process etcd;
  corvid::discovery::etcd_client client(etcd.endpoint(), 2000ms);
  auto put_keys = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      const std::string name = "k" + std::to_string(1000 + i);
      ASSERT_FALSE(
          client.put(prefix + "/" + name, instance("127.0.0.2:" + std::to_string(1000 + i), name)));
    }
  };
  put_keys(0, 20);
  auto metrics = std::make_shared<corvid::client_metrics>();
  corvid::lb_config cfg;
  cfg.max_endpoints = 4;  // the source holds 8 keys
  cfg.pool.client.metrics = metrics;
  handed_over got;
  auto source = corvid::discovery::open_source(etcd.url(prefix), cfg, got.callback());
  ASSERT_TRUE(source) << source.error().message();
  EXPECT_EQ(got.size(), 8u);
  EXPECT_NE(metrics->prometheus_text().find(rejected_line("over_limit", 12)), std::string::npos)
      << metrics->prometheus_text();
  // Keys added while it follows are turned away too.
  put_keys(20, 30);
  ASSERT_TRUE(eventually(
      [&] {
        return metrics->prometheus_text().find(rejected_line("over_limit", 22)) !=
               std::string::npos;
      },
      patience(5s)))
      << metrics->prometheus_text();
  EXPECT_EQ(got.size(), 8u);
  // A key deleted makes room: the prefix is read again, and the source is full again.
  ASSERT_FALSE(client.erase(prefix + "/k1000"));
  EXPECT_TRUE(eventually(
      [&] {
        auto a = got.addresses();
        return a.size() == 8u && std::find(a.begin(), a.end(), "127.0.0.2:1000") == a.end();
      },
      patience(5s)));
}

TEST(registry_input, file_lines_that_are_not_addresses_are_rejected_and_the_others_used) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("corvid-input-" + std::to_string(::getpid())))
          .string();
  std::ofstream(path) << "127.0.0.2:1\nno-port\n127.0.0.1:99999\n:80\nunix:\n[::1]:2\n";
  auto metrics = std::make_shared<corvid::client_metrics>();
  corvid::lb_config cfg;
  cfg.pool.client.metrics = metrics;
  handed_over got;
  auto source = corvid::discovery::open_source("file://" + path, cfg, got.callback());
  std::filesystem::remove(path);
  ASSERT_TRUE(source) << source.error().message();
  EXPECT_EQ(got.addresses(), (std::vector<std::string>{"127.0.0.2:1", "[::1]:2"}));
  EXPECT_NE(metrics->prometheus_text().find(rejected_line("bad_address", 4)), std::string::npos)
      << metrics->prometheus_text();
}

TEST(registry_input, a_list_item_that_is_not_an_address_is_an_error_at_open) {
  for (const char* url : {"list://127.0.0.1:99999", "list://127.0.0.1:0", "list://:80",
                          "list://127.0.0.1:80,no-port", "list://127.0.0.1:8x"}) {
    auto lb = corvid::sync_wait(corvid::load_balancer::open(url));
    ASSERT_FALSE(lb) << url;
    EXPECT_EQ(lb.error().code(), corvid::rpc_errc::invalid_argument) << url;
  }
}

}  // namespace
}  // namespace discovery_test
