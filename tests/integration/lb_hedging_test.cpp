// Hedged calls and per-method settings through a load_balancer (lb_config::methods): a copy
// sent to a second server answers a call the first one stalls, and the stalled server sees
// its copy cancelled; a method not declared idempotent, or a fleet of one, is never hedged;
// a method's own timeout bounds its calls.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "slowdown.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

std::atomic<int> stalls_left{0};   // the next calls to arrive that stall
std::atomic<int> calls_seen{0};    // calls that reached a handler
std::atomic<int> cancels_seen{0};  // stalled calls that saw their cancel
std::atomic<bool> stalled_may_end{false};

// Stalls (until cancelled or the test ends) when a stall is left; else answers at once.
corvid::task<int> lookup(corvid::request_context& ctx, int x) {
  calls_seen.fetch_add(1);
  if (stalls_left.fetch_sub(1) > 0) {
    while (!ctx.cancelled() && !stalled_may_end.load()) co_await ctx.sleep_for(5ms);
    if (ctx.cancelled()) cancels_seen.fetch_add(1);
  }
  co_return x + 1;
}
// The same work, not declared idempotent.
corvid::task<int> update(corvid::request_context& ctx, int x) { co_return co_await lookup(ctx, x); }

struct fleet {
  explicit fleet(int count) {
    stalls_left = 0;
    calls_seen = 0;
    cancels_seen = 0;
    stalled_may_end = false;
    for (int i = 0; i < count; ++i) {
      auto s = std::make_unique<corvid::rpc_server>(test_server::make_config());
      s->register_handler<lookup, update>();
      if (auto e = s->async_start()) throw std::runtime_error(e.message());
      endpoints.push_back({"127.0.0.1:" + std::to_string(s->port())});
      servers.push_back(std::move(s));
    }
  }
  ~fleet() { stalled_may_end = true; }
  std::shared_ptr<corvid::load_balancer> balancer(
      corvid::method_config methods, std::shared_ptr<corvid::client_metrics> metrics = {}) const {
    corvid::lb_config cfg;
    cfg.pool.client.metrics = std::move(metrics);
    cfg.follow_health = false;
    cfg.pool.client.request_timeout = 20s;  // bounds a hung test only
    cfg.methods = std::move(methods);
    return corvid::load_balancer::create(endpoints, cfg);
  }

  std::vector<std::unique_ptr<corvid::rpc_server>> servers;
  std::vector<corvid::lb_endpoint> endpoints;
};

corvid::method_config hedged(std::string name, bool idempotent) {
  corvid::method_config m;
  m.set(std::move(name), {.idempotent = idempotent,
                          .hedging = corvid::hedging_policy{.max_copies = 3, .delay = 20ms}});
  return m;
}

template <auto F>
corvid::expected<int, corvid::rpc_error> call(corvid::load_balancer& lb, int x) {
  return corvid::sync_wait(lb.call<F>(x));
}

TEST(lb_hedging,
     a_copy_on_another_server_answers_a_stalled_call_and_the_stalled_copy_is_cancelled) {
  fleet f(2);
  auto metrics = std::make_shared<corvid::client_metrics>();
  auto lb =
      f.balancer(hedged(std::string(corvid::protocol::function_name_v<&lookup>), true), metrics);
  ASSERT_TRUE(call<lookup>(*lb, 0));  // both servers connected before the stall
  ASSERT_TRUE(call<lookup>(*lb, 0));
  calls_seen = 0;
  stalls_left = 1;
  auto r = call<lookup>(*lb, 41);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 42);
  const auto s = lb->balancer_stats();
  EXPECT_EQ(s.hedges, 1u);
  EXPECT_EQ(s.hedges_won, 1u);
  EXPECT_EQ(calls_seen.load(), 2);
  const std::string text = metrics->prometheus_text();
  EXPECT_NE(text.find("corvid_lb_hedges_total{result=\"sent\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("corvid_lb_hedges_total{result=\"won\"} 1\n"), std::string::npos) << text;
  // The loser was cancelled on the wire: its handler wakes and sees it.
  EXPECT_TRUE(eventually([] { return cancels_seen.load() == 1; }));
}

TEST(lb_hedging, a_fast_answer_sends_no_copy) {
  fleet f(2);
  auto lb = f.balancer(hedged("*", true));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(call<lookup>(*lb, i));
  EXPECT_EQ(lb->balancer_stats().hedges, 0u);
  EXPECT_EQ(calls_seen.load(), 20);
}

// A stalled call of F through a fleet of `servers` with hedging for every method: it times
// out having sent no second copy.
template <auto F>
void expect_no_hedge(int servers, bool idempotent) {
  fleet f(servers);
  auto lb = f.balancer(hedged("*", idempotent));
  stalls_left = 1;
  auto r = corvid::sync_wait(lb->call_for<F>(300ms, 1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout);
  EXPECT_EQ(lb->balancer_stats().hedges, 0u);
  EXPECT_EQ(calls_seen.load(), 1);
}

TEST(lb_hedging, a_method_not_declared_idempotent_is_never_hedged) {
  expect_no_hedge<update>(2, false);
}

TEST(lb_hedging, a_copy_never_goes_to_the_same_endpoint_twice) { expect_no_hedge<lookup>(1, true); }

TEST(lb_hedging, a_call_with_attachment_is_hedged_with_its_attachment) {
  fleet f(3);
  auto lb = f.balancer(hedged("*", true));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(call<lookup>(*lb, 0));
  stalls_left = 2;  // two copies stall: the third answers
  std::string attachment(1000, 'a');
  corvid::call_options o;
  o.attachment = attachment;
  auto r = corvid::sync_wait(lb->call_with<lookup>(o, 6));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->value, 7);
  EXPECT_EQ(lb->balancer_stats().hedges, 2u);
  EXPECT_TRUE(eventually([] { return cancels_seen.load() == 2; }));
}

// call_options::hedging: one call hedged although its method has no entry (the caller declares
// it safe to repeat), and one call of a hedged method not hedged (max_copies 1).
TEST(lb_hedging, a_calls_own_hedging_overrides_its_methods) {
  fleet f(2);
  auto lb = f.balancer({});
  ASSERT_TRUE(call<update>(*lb, 0));  // both servers connected before the stall
  ASSERT_TRUE(call<update>(*lb, 0));
  calls_seen = 0;
  stalls_left = 1;
  const corvid::hedging_policy two{.max_copies = 2, .delay = 20ms};
  corvid::call_options o;
  o.hedging = &two;
  auto r = corvid::sync_wait(lb->call_with<update>(o, 41));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->value, 42);
  EXPECT_EQ(lb->balancer_stats().hedges, 1u);
  EXPECT_EQ(calls_seen.load(), 2);
  EXPECT_TRUE(eventually([] { return cancels_seen.load() == 1; }));

  // Every method hedged by the balancer's settings; this call says one copy only.
  fleet g(2);
  auto hedging = g.balancer(hedged("*", true));
  ASSERT_TRUE(call<lookup>(*hedging, 0));
  ASSERT_TRUE(call<lookup>(*hedging, 0));
  calls_seen = 0;
  stalls_left = 1;
  const corvid::hedging_policy one{.max_copies = 1};
  corvid::call_options single;
  single.hedging = &one;
  single.timeout = 300ms;
  auto stalled = corvid::sync_wait(hedging->call_with<lookup>(single, 1));
  ASSERT_FALSE(stalled);
  EXPECT_EQ(stalled.error().code(), corvid::rpc_errc::timeout);
  EXPECT_EQ(hedging->balancer_stats().hedges, 0u);
  EXPECT_EQ(calls_seen.load(), 1);
}

TEST(lb_methods, a_methods_own_timeout_bounds_its_calls) {
  fleet f(1);
  corvid::method_config m;
  m.set<&lookup>({.timeout = 100ms});
  auto lb = f.balancer(std::move(m));
  stalls_left = 1;
  auto r = call<lookup>(*lb, 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout);
}

// Ends every stall after `after` (a stalled call then answers): a call still waiting by then
// was not bounded by its method's timeout.
class stall_ender {
 public:
  explicit stall_ender(std::chrono::milliseconds after)
      : t_([this, after] {
          std::unique_lock lk(m_);
          if (!cv_.wait_for(lk, after, [this] { return done_; })) stalled_may_end = true;
        }) {}
  ~stall_ender() {
    {
      std::lock_guard lk(m_);
      done_ = true;
    }
    cv_.notify_one();
    t_.join();
    stalled_may_end = false;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread t_;  // last: it starts once the others exist
};

template <auto F>
corvid::expected<int, corvid::rpc_error> call(corvid::rpc_client& client, int x) {
  return corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call<F>(x);
  }());
}

// client_config::methods: a plain client's and a pool's calls given no timeout take their
// method's; a timeout given with the call wins; other methods keep request_timeout.
TEST(client_methods, a_methods_own_timeout_bounds_a_clients_and_a_pools_calls) {
  fleet f(1);
  corvid::client_config cfg;
  cfg.request_timeout = 20s;  // bounds a hung test only
  cfg.methods.set<&lookup>({.timeout = 100ms});
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(client.connect(f.endpoints[0].address)));
  {
    stall_ender ender(corvid::test::patience(2000ms));
    stalls_left = 1;
    auto r = call<lookup>(client, 1);
    ASSERT_FALSE(r) << "the stall ended first: the method's 100 ms did not bound the call";
    EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout);
  }
  {
    // The same stall with a timeout of the call's own outlives the method's 100 ms.
    stall_ender ender(300ms);
    stalls_left = 1;
    auto own = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
      co_return co_await client.call_for<lookup>(10s, 1);
    }());
    ASSERT_TRUE(own) << own.error().message();
    EXPECT_EQ(*own, 2);
  }
  {
    // Another method: request_timeout, not lookup's.
    stall_ender ender(300ms);
    stalls_left = 1;
    auto other = call<update>(client, 1);
    ASSERT_TRUE(other) << other.error().message();
  }
  corvid::pool_config pc;
  pc.client = cfg;
  auto pool = corvid::client_pool::create(f.endpoints[0].address, pc);
  for (int i = 0; i < 2; ++i) {  // the first call waits for the connection, the second not
    stall_ender ender(corvid::test::patience(2000ms));
    stalls_left = 1;
    auto pooled = corvid::sync_wait(pool->call<lookup>(1));
    ASSERT_FALSE(pooled) << "call " << i << ": the method's 100 ms did not bound it";
    EXPECT_EQ(pooled.error().code(), corvid::rpc_errc::timeout);
  }
}

}  // namespace
}  // namespace corvid_test
