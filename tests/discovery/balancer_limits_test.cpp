// What a registry can do to a balancer that follows it (file:// here, the same path as etcd's
// and DNS's updates): a flood of entries stops at lb_config::max_endpoints with the answering
// servers kept, endpoints that join take calls only once they have answered, and an update
// that empties the set is held for a grace instead of failing every call.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "background_quiet.hpp"
#include "discovery_support.hpp"

namespace discovery_test {
namespace {

using corvid::test::eventually;
using corvid::test::patience;

class endpoint_file {
 public:
  endpoint_file()
      : path_((std::filesystem::temp_directory_path() /
               ("corvid-limits-" + std::to_string(::getpid()) + "-" + std::to_string(++count_)))
                  .string()) {}
  ~endpoint_file() { std::filesystem::remove(path_); }
  // Replaced whole, as configuration tools do: a new file renamed over the old one.
  void write(const std::vector<std::string>& lines) {
    {
      std::ofstream out(path_ + ".new");
      for (const auto& l : lines) out << l << "\n";
    }
    std::filesystem::rename(path_ + ".new", path_);
  }
  std::string url() const { return "file://" + path_; }

 private:
  static inline int count_ = 0;
  std::string path_;
};

// Addresses nothing listens on: 127.0.0.2 is loopback, and the tests' servers bind 127.0.0.1.
std::vector<std::string> refusing(int n, int first_port = 20000) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("127.0.0.2:" + std::to_string(first_port + i));
  return out;
}

corvid::lb_config file_config() {
  corvid::lb_config cfg;
  cfg.file_poll_interval = 20ms;
  cfg.pool.reconnect_backoff_initial = 50ms;
  return cfg;
}

// Calls made through the balancer by `c`, counted once they exceed `more` than now.
bool answers_grow(caller& c, const std::string& name, int more) {
  const int base = c.answered_by(name);
  return eventually([&] { return c.answered_by(name) >= base + more; }, patience(20s));
}

TEST(balancer_limits, a_flood_of_entries_stops_at_max_endpoints_and_calls_go_on) {
  named_server a("a");
  endpoint_file file;
  file.write({a.endpoint()});
  auto cfg = file_config();
  cfg.max_endpoints = 256;
  auto lb = open_balancer(file.url(), cfg);
  caller c(*lb);
  ASSERT_TRUE(answers_grow(c, "a", 10));
  auto flood = refusing(10000);
  flood.push_back(a.endpoint());
  file.write(flood);
  ASSERT_TRUE(eventually([&] { return lb->balancer_stats().endpoints == cfg.max_endpoints; },
                         patience(20s)))
      << lb->balancer_stats().endpoints << " endpoints followed";
  EXPECT_GT(lb->balancer_stats().rejected_over_limit, 0u);
  EXPECT_TRUE(stats_of(*lb, a.endpoint()).address == a.endpoint())
      << "the answering server was pushed out by the flood";
  EXPECT_TRUE(answers_grow(c, "a", 100)) << "calls stopped: " << c.last_error();
  c.stop();
  EXPECT_EQ(c.failed(), 0) << c.last_error();
}

// An endpoint turned away is counted once while it stays listed, not again on every update.
TEST(balancer_limits, endpoints_over_the_limit_are_counted_once_each) {
  named_server a("a");
  endpoint_file file;
  auto cfg = file_config();
  cfg.max_endpoints = 8;
  auto listed = refusing(12);  // the source holds up to 16: all reach the balancer
  listed.insert(listed.begin(), a.endpoint());
  file.write(listed);
  auto lb = open_balancer(file.url(), cfg);
  ASSERT_TRUE(
      eventually([&] { return lb->balancer_stats().rejected_over_limit == 5; }, patience(10s)))
      << lb->balancer_stats().rejected_over_limit;
  // The same list again, and one more: only the new one is counted.
  listed.push_back("127.0.0.2:19999");
  file.write(listed);
  ASSERT_TRUE(
      eventually([&] { return lb->balancer_stats().rejected_over_limit >= 6; }, patience(10s)))
      << lb->balancer_stats().rejected_over_limit;
  // The others again, in another order, without one that was followed: its place goes to one
  // turned away before, and the rest are turned away again, not counted again.
  const std::string dropped = listed[1];
  listed.erase(listed.begin() + 1);
  std::reverse(listed.begin() + 1, listed.end());
  file.write(listed);
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& e : lb->endpoints()) {
          if (e.address == dropped) return false;
        }
        return true;
      },
      patience(10s)));
  EXPECT_EQ(lb->balancer_stats().rejected_over_limit, 6u);
  EXPECT_EQ(lb->balancer_stats().endpoints, 8u);
}

TEST(balancer_limits, endpoints_that_join_take_calls_only_once_they_have_answered) {
  named_server a("a");
  endpoint_file file;
  file.write({a.endpoint()});
  auto lb = open_balancer(file.url(), file_config());
  caller c(*lb);
  ASSERT_TRUE(answers_grow(c, "a", 10));
  auto joined = refusing(50);
  joined.push_back(a.endpoint());
  file.write(joined);
  ASSERT_TRUE(eventually([&] { return lb->balancer_stats().endpoints == 51; }, patience(10s)));
  EXPECT_TRUE(answers_grow(c, "a", 200)) << c.last_error();
  c.stop();
  EXPECT_EQ(c.failed(), 0) << "calls went to endpoints that never answered: " << c.last_error();
  for (const auto& s : lb->stats()) {
    if (s.address != a.endpoint()) {
      EXPECT_EQ(s.calls, 0u) << s.address;
    }
  }
}

TEST(balancer_limits, an_update_that_empties_the_set_is_held_for_the_grace) {
  named_server a("a");
  endpoint_file file;
  file.write({a.endpoint()});
  auto cfg = file_config();
  cfg.empty_update_grace = 60s;
  auto lb = open_balancer(file.url(), cfg);
  file.write({});
  ASSERT_TRUE(eventually([&] { return lb->balancer_stats().holding_empty_update; }, patience(10s)));
  EXPECT_EQ(spread(*lb, 10), (std::map<std::string, int>{{"a", 10}}));
  EXPECT_EQ(lb->balancer_stats().empty_updates_held, 1u);
  file.write({a.endpoint()});  // a non-empty update ends the hold
  ASSERT_TRUE(
      eventually([&] { return !lb->balancer_stats().holding_empty_update; }, patience(10s)));
  EXPECT_EQ(lb->balancer_stats().endpoints, 1u);
}

TEST(balancer_limits, a_held_empty_update_applies_once_the_grace_has_passed) {
  named_server a("a");
  endpoint_file file;
  file.write({a.endpoint()});
  auto cfg = file_config();
  cfg.empty_update_grace = 200ms;
  auto lb = open_balancer(file.url(), cfg);
  file.write({});
  ASSERT_TRUE(eventually([&] { return lb->balancer_stats().holding_empty_update; }, patience(10s)));
  // Applied by the first call after the grace.
  EXPECT_TRUE(eventually(
      [&] {
        (void)spread(*lb, 1);
        return lb->endpoints().empty();
      },
      patience(10s)));
  auto r = spread(*lb, 1);
  EXPECT_EQ(r.count("!connect_failed"), 1u);
}

}  // namespace
}  // namespace discovery_test
