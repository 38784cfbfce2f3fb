// load_balancer: policies, ejection of a dead endpoint and its return, ejection of a silent
// one after timeouts, probes that keep to the caller's deadline, endpoint removal and the cap.
#include <algorithm>
#include <future>
#include <map>
#include <thread>

#include "background_quiet.hpp"
#include "blackhole.hpp"
#include "free_port.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

// Each test server answers calculator::plus(0) with its own base, identifying itself.
std::unique_ptr<test_server> server_with_base(int base, std::uint16_t port = 0) {
  auto cfg = test_server::make_config();
  cfg.port = port;
  auto s = std::make_unique<test_server>(cfg);
  s->calc().base = base;
  return s;
}

std::uint16_t unused_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

// Makes `n` calls and counts which server (by base) answered each; failures under -1.
std::map<int, int> spread(corvid::load_balancer& lb, int n) {
  return corvid::sync_wait([&]() -> corvid::task<std::map<int, int>> {
    std::map<int, int> seen;
    for (int i = 0; i < n; ++i) {
      auto r = co_await lb.call<&calculator::plus>(0);
      ++seen[r ? *r : -1];
    }
    co_return seen;
  }());
}

// Calls the balancer has routed to `address` (and that have ended).
std::uint64_t calls_routed_to(corvid::load_balancer& lb, const std::string& address) {
  for (auto& s : lb.stats()) {
    if (s.address == address) return s.calls;
  }
  return 0;
}

TEST(load_balancer, round_robin_spreads_evenly) {
  auto a = server_with_base(1), b = server_with_base(2), c = server_with_base(3);
  auto lb = corvid::load_balancer::create({{a->endpoint()}, {b->endpoint()}, {c->endpoint()}});
  auto seen = spread(*lb, 300);
  EXPECT_EQ(seen, (std::map<int, int>{{1, 100}, {2, 100}, {3, 100}}));
}

TEST(load_balancer, weighted_round_robin_follows_weights) {
  auto a = server_with_base(1), b = server_with_base(2), c = server_with_base(3);
  corvid::lb_config cfg;
  cfg.policy = corvid::lb_policy::weighted_round_robin;
  auto lb = corvid::load_balancer::create(
      {{a->endpoint(), 1}, {b->endpoint(), 2}, {c->endpoint(), 3}}, cfg);
  auto seen = spread(*lb, 600);
  EXPECT_EQ(seen, (std::map<int, int>{{1, 100}, {2, 200}, {3, 300}}));
}

TEST(load_balancer, random_and_power_of_two_reach_every_endpoint) {
  auto a = server_with_base(1), b = server_with_base(2), c = server_with_base(3);
  for (auto policy : {corvid::lb_policy::random, corvid::lb_policy::power_of_two_choices}) {
    corvid::lb_config cfg;
    cfg.policy = policy;
    auto lb =
        corvid::load_balancer::create({{a->endpoint()}, {b->endpoint()}, {c->endpoint()}}, cfg);
    auto seen = spread(*lb, 600);
    EXPECT_EQ(seen.count(-1), 0u);
    for (int base : {1, 2, 3}) EXPECT_GT(seen[base], 60) << "endpoint " << base;
  }
}

TEST(load_balancer, dead_endpoint_is_ejected_then_restored_when_it_returns) {
  auto a = server_with_base(1), b = server_with_base(2);
  const std::uint16_t dead = unused_port();
  const std::string dead_ep = "127.0.0.1:" + std::to_string(dead);
  corvid::lb_config cfg;
  // Long enough for the 100 calls below to run inside it on a loaded machine; short enough
  // that the endpoint's return is seen soon after.
  cfg.eject_base = 1s;
  cfg.pool.reconnect_backoff_initial = 10ms;
  auto lb = corvid::load_balancer::create({{a->endpoint()}, {b->endpoint()}, {dead_ep}}, cfg);
  auto first = spread(*lb, 30);
  EXPECT_LE(first[-1], 1) << "only the call that found it dead may fail";
  const auto dead_calls = calls_routed_to(*lb, dead_ep);
  auto during = spread(*lb, 100);  // within the ejection
  EXPECT_EQ(during.count(-1), 0u);
  EXPECT_EQ(calls_routed_to(*lb, dead_ep), dead_calls)
      << "a call was routed to the ejected endpoint";
  // The endpoint comes back; after its ejection ends, a probe succeeds and it is used again.
  auto revived = server_with_base(3, dead);
  std::map<int, int> later;
  EXPECT_TRUE(eventually(
      [&] {
        later = spread(*lb, 30);
        return later[3] > 0;
      },
      10s))
      << "the restored endpoint never got calls again";
}

// Many calls in flight on an endpoint that dies fail together: one failure episode, so the
// endpoint is back after eject_base, not after a back-off doubled once per failed call.
TEST(load_balancer, calls_failing_together_eject_once) {
  auto a = server_with_base(1);
  auto b_cfg = test_server::make_config();
  b_cfg.stop_timeout = 0ms;  // stop() drops the sleeping calls: they see connection_closed
  auto b = std::make_unique<test_server>(b_cfg);
  b->calc().base = 2;
  const std::uint16_t b_port = b->port();
  const std::string b_address = b->endpoint();
  corvid::lb_config cfg;
  cfg.eject_base = 100ms;
  cfg.eject_max = 60s;
  cfg.pool.reconnect_backoff_initial = 10ms;
  cfg.pool.reconnect_backoff_max = 100ms;
  auto lb = corvid::load_balancer::create({{a->endpoint()}, {b->endpoint()}}, cfg);
  std::atomic<int> failed{0};
  std::vector<std::thread> callers;
  sleepy_started = 0;
  for (int i = 0; i < 16; ++i) {
    callers.emplace_back([&] {
      auto r = corvid::sync_wait(lb->call<sleepy>(1500));
      if (!r) ++failed;
    });
  }
  // Round robin: about half of them sleep on b; once every call sleeps on one server or the
  // other, b goes away under those on it (a's answer later). Waiting for b's frames instead
  // raced: a caller not yet sent could still find b gone and be served by a. Every call b
  // had fails, and only those.
  ASSERT_TRUE(eventually([&] { return sleepy_started.load() == 16; }));
  b->server().stop();
  b.reset();
  for (auto& t : callers) t.join();
  EXPECT_GE(failed.load(), 1);
  EXPECT_EQ(static_cast<std::uint64_t>(failed.load()), calls_routed_to(*lb, b_address));
  // b returns on its port; with one ejection it is probed within ~100 ms and used again.
  auto revived = server_with_base(2, b_port);
  const auto b_ep = revived->endpoint();
  const auto before = calls_routed_to(*lb, b_ep);
  EXPECT_TRUE(eventually(
      [&] {
        (void)corvid::sync_wait(lb->call<&calculator::plus>(0));
        return calls_routed_to(*lb, b_ep) > before + 2;
      },
      5s))
      << "the endpoint stayed ejected: each failed call doubled its back-off";
}

// A host that accepts and then answers nothing: its calls time out while the connection stays
// up; after eject_after_timeouts in a row it is ejected and the rest go elsewhere.
TEST(load_balancer, silent_endpoint_is_ejected_after_consecutive_timeouts) {
  auto a = server_with_base(1);
  silent_server silent;
  corvid::lb_config cfg;
  cfg.eject_after_timeouts = 3;
  cfg.eject_base = 60s;  // no probe during the test
  auto lb = corvid::load_balancer::create({{a->endpoint()}, {silent.endpoint()}}, cfg);
  auto seen = corvid::sync_wait([&]() -> corvid::task<std::map<int, int>> {
    std::map<int, int> out;
    for (int i = 0; i < 40; ++i) {
      auto r = co_await lb->call_for<&calculator::plus>(50ms, 0);
      ++out[r ? *r : -1];
    }
    co_return out;
  }());
  EXPECT_EQ(calls_routed_to(*lb, silent.endpoint()), 3u);
  EXPECT_EQ(seen[-1], 3);
  EXPECT_EQ(seen[1], 37);
  const auto stats = lb->stats();
  const auto it = std::find_if(stats.begin(), stats.end(),
                               [&](const auto& s) { return s.address == silent.endpoint(); });
  ASSERT_NE(it, stats.end()) << "no stats for the silent endpoint";
  EXPECT_TRUE(it->ejected);
}

// Ejects `silent` (the balancer's only endpoint or one of them) with one timed-out call and
// waits for its back-off to pass: the next pick of it is a probe. The probe's own timeout
// (max(eject_base, 100 ms)) is 30 s, far past any caller's deadline here.
corvid::lb_config probe_config() {
  corvid::lb_config cfg;
  cfg.eject_after_timeouts = 1;
  cfg.eject_base = 30s;
  cfg.eject_max = 100ms;  // the back-off: min(eject_base, eject_max)
  cfg.follow_health = false;
  return cfg;
}

std::uint64_t failures_of(corvid::load_balancer& lb, const std::string& address) {
  for (auto& s : lb.stats()) {
    if (s.address == address) return s.failures;
  }
  return 0;
}

// The silent server goes, so the probe still waiting on it fails and ends: nothing is left
// running when the test ends.
void end_the_probe(corvid::load_balancer& lb, std::unique_ptr<silent_server>& silent) {
  const std::string address = silent->endpoint();
  const auto before = failures_of(lb, address);
  silent.reset();
  EXPECT_TRUE(eventually([&] { return failures_of(lb, address) > before; }, 30s));
}

void eject_and_wait_out(corvid::load_balancer& lb, const std::string& silent) {
  for (int i = 0; i < 20 && calls_routed_to(lb, silent) == 0; ++i)
    (void)corvid::sync_wait(lb.call_for<&calculator::plus>(50ms, 0));
  ASSERT_TRUE(eventually([&] {
    for (auto& s : lb.stats()) {
      if (s.address == silent) return s.failures > 0 && !s.ejected;
    }
    return false;
  })) << "the silent endpoint was never ejected, or stayed ejected";
}

// A call whose only endpoint is being probed waits for the probe no longer than its deadline.
TEST(load_balancer, a_probe_never_outlasts_the_callers_deadline) {
  auto silent = std::make_unique<silent_server>();
  auto lb = corvid::load_balancer::create({{silent->endpoint()}}, probe_config());
  eject_and_wait_out(*lb, silent->endpoint());
  auto done = std::async(std::launch::async, [&] {
    return corvid::sync_wait(lb->call_for<&calculator::plus>(200ms, 0));
  });
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready)
      << "the call waited for the probe's 30 s timeout, not its own 200 ms";
  EXPECT_FALSE(done.get());  // the probe it waited for ended with it
}

// The probe's connect counts too: a call waits for no part of a probe past its deadline.
TEST(load_balancer, a_probe_whose_connect_hangs_never_outlasts_the_callers_deadline) {
  const std::uint16_t port = corvid::test::free_port();
  const std::string gone = "127.0.0.1:" + std::to_string(port);
  auto cfg = probe_config();
  cfg.pool.connect_timeout = 60s;
  cfg.pool.reconnect_backoff_initial = 1ms;
  cfg.pool.reconnect_backoff_max = 1ms;
  auto lb = corvid::load_balancer::create({{gone}}, cfg);
  // Refused at once while nothing listens: ejected for eject_max (100 ms).
  (void)corvid::sync_wait(lb->call_for<&calculator::plus>(50ms, 0));
  corvid::test::blackhole hole(port);
  ASSERT_TRUE(eventually([&] {
    for (auto& s : lb->stats()) {
      if (s.address == gone) return s.failures > 0 && !s.ejected;
    }
    return false;
  }));
  auto done = std::async(std::launch::async, [&] {
    return corvid::sync_wait(lb->call_for<&calculator::plus>(200ms, 0));
  });
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready)
      << "the call waited for the probe's connect (60 s), not its own 200 ms";
  auto r = done.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout) << r.error().message();
  // The balancer let go, its pool closes the connect still in progress: the binary's wait for
  // background work (background_quiet.hpp) ends at once, not after 60 s.
}

// With another endpoint usable, a probe runs beside the calls: none waits for it.
TEST(load_balancer, probes_run_in_the_background_while_another_endpoint_serves) {
  auto a = server_with_base(1);
  auto silent = std::make_unique<silent_server>();
  const std::string silent_ep = silent->endpoint();
  auto lb = corvid::load_balancer::create({{a->endpoint()}, {silent_ep}}, probe_config());
  eject_and_wait_out(*lb, silent_ep);
  auto done = std::async(std::launch::async, [&] { return spread(*lb, 20); });
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready)
      << "a call became the probe and waited for its 30 s timeout";
  EXPECT_EQ(done.get(), (std::map<int, int>{{1, 20}}));
  EXPECT_TRUE(eventually([&] {
    for (auto& s : lb->stats()) {
      if (s.address == silent_ep) return s.ejected;  // probing counts as ejected
    }
    return false;
  })) << "no probe of the silent endpoint was started";
  end_the_probe(*lb, silent);
}

TEST(load_balancer, add_endpoint_stops_at_max_endpoints) {
  corvid::lb_config cfg;
  cfg.max_endpoints = 2;
  cfg.follow_health = false;
  auto lb = corvid::load_balancer::create({}, cfg);
  EXPECT_TRUE(lb->add_endpoint({"127.0.0.1:1"}));
  EXPECT_FALSE(lb->add_endpoint({"127.0.0.1:1"})) << "followed twice";
  EXPECT_TRUE(lb->add_endpoint({"127.0.0.1:2"}));
  EXPECT_FALSE(lb->add_endpoint({"127.0.0.1:3"}));
  EXPECT_EQ(lb->endpoints().size(), 2u);
  EXPECT_EQ(lb->balancer_stats().rejected_over_limit, 1u);
}

TEST(load_balancer, removing_an_endpoint_releases_its_connections) {
  auto a = server_with_base(1), b = server_with_base(2);
  auto lb = corvid::load_balancer::create({{a->endpoint()}, {b->endpoint()}});
  spread(*lb, 20);
  EXPECT_EQ(b->server().connection_count(), 1u);
  EXPECT_TRUE(lb->remove_endpoint(b->endpoint()));
  EXPECT_FALSE(lb->remove_endpoint(b->endpoint()));
  EXPECT_TRUE(eventually([&] { return b->server().connection_count() == 0; }))
      << b->server().connection_count() << " connections left";
  auto seen = spread(*lb, 20);
  EXPECT_EQ(seen, (std::map<int, int>{{1, 20}}));
  lb->add_endpoint({b->endpoint()});
  seen = spread(*lb, 20);
  EXPECT_EQ(seen, (std::map<int, int>{{1, 10}, {2, 10}}));
}

}  // namespace
}  // namespace corvid_test
