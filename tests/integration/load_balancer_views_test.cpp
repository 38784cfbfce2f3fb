// load_balancer's per-reactor holds on its published view: calls made on a client reactor
// read the view through that reactor's own hold, so a reactor that stops calling must not
// keep a replaced view (and the pools of the endpoints it no longer lists) alive, and calls
// made while the membership changes under them all end with the right answer.
#include <atomic>
#include <map>

#include "test_support.hpp"

namespace corvid_test {
namespace {

std::unique_ptr<test_server> server_with_base(int base) {
  auto s = std::make_unique<test_server>(test_server::make_config());
  s->calc().base = base;
  return s;
}

// `n` calls made on reactor `r`, counted by the answering server's base (failures under -1).
std::map<int, int> spread_on(corvid::load_balancer& lb, asio::io_context& r, int n) {
  return corvid::sync_wait([](corvid::load_balancer& b, asio::io_context& home,
                              int calls) -> corvid::task<std::map<int, int>> {
    co_await hop{home};
    std::map<int, int> seen;
    for (int i = 0; i < calls; ++i) {
      auto v = co_await b.call<&calculator::plus>(0);
      ++seen[v ? *v : -1];
    }
    co_return seen;
  }(lb, r, n));
}

corvid::lb_config on(corvid::io_pool& reactors) {
  corvid::lb_config cfg;
  cfg.pool.client.pool = &reactors;
  cfg.follow_health = false;
  return cfg;
}

TEST(load_balancer_views, an_idle_reactor_does_not_keep_a_removed_endpoints_connections) {
  corvid::io_pool reactors(2);
  auto a = server_with_base(1), b = server_with_base(2);
  auto lb = corvid::load_balancer::create({{a->endpoint()}, {b->endpoint()}}, on(reactors));
  EXPECT_EQ(spread_on(*lb, reactors.at(1), 20), (std::map<int, int>{{1, 10}, {2, 10}}));
  ASSERT_EQ(b->server().connection_count(), 1u);
  // Reactor 1 makes no call from here on; its hold must not keep b's pool.
  ASSERT_TRUE(lb->remove_endpoint(b->endpoint()));
  EXPECT_TRUE(eventually([&] { return b->server().connection_count() == 0; }))
      << b->server().connection_count() << " connections left";
  EXPECT_EQ(spread_on(*lb, reactors.at(1), 10), (std::map<int, int>{{1, 10}}));
  EXPECT_EQ(spread_on(*lb, reactors.at(0), 10), (std::map<int, int>{{1, 10}}));
}

TEST(load_balancer_views, calls_on_every_reactor_survive_membership_changes) {
  corvid::io_pool reactors(2);
  auto a = server_with_base(1), b = server_with_base(2), c = server_with_base(3);
  auto lb = corvid::load_balancer::create({{a->endpoint()}}, on(reactors));
  constexpr int callers = 8, calls = 200;
  std::atomic<int> ok{0}, failed{0}, done{0};
  for (int i = 0; i < callers; ++i) {
    [](corvid::load_balancer& balancer, asio::io_context& home, std::atomic<int>& good,
       std::atomic<int>& bad, std::atomic<int>& finished) -> corvid::detail::detached {
      co_await hop{home};
      for (int k = 0; k < calls; ++k) {
        auto v = co_await balancer.call<&calculator::plus>(k);
        // Every server is a listed one: its base is 1, 2 or 3.
        if (v && *v >= k + 1 && *v <= k + 3) {
          ++good;
        } else {
          ++bad;
        }
      }
      ++finished;
    }(*lb, reactors.at(static_cast<std::size_t>(i) % 2), ok, failed, done);
  }
  // Endpoints come and go while the calls run; `a` stays, so every call has somewhere to go.
  for (int round = 0; done.load() < callers && round < 10000; ++round) {
    lb->add_endpoint({round % 2 == 0 ? b->endpoint() : c->endpoint()});
    lb->remove_endpoint(round % 2 == 0 ? c->endpoint() : b->endpoint());
  }
  ASSERT_TRUE(eventually([&] { return done.load() == callers; }, 30s));
  EXPECT_EQ(ok.load(), callers * calls);
  EXPECT_EQ(failed.load(), 0);
}

}  // namespace
}  // namespace corvid_test
