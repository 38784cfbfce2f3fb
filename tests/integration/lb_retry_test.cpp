// load_balancer's retry policy (lb_config::retry): idempotent methods are sent again on
// another endpoint after server_busy; other methods are not; the budget stops retries when
// most calls fail. The fleet: server `a` answers every call, server `b` refuses every call of
// `work` (its one slot is held by a call that waits for the test's end).
#include <atomic>

#include "test_support.hpp"

namespace corvid_test {
namespace {

std::atomic<bool> held_calls_may_end{false};

// x < 0: holds its server's slot for `work` until the test lets it go.
corvid::task<int> work(int x) {
  while (x < 0 && !held_calls_may_end.load()) co_await corvid::sleep_for(1ms);
  co_return x + 1;
}
// The same, but not declared idempotent.
corvid::task<int> other(int x) { co_return co_await work(x); }

struct fleet {
  fleet() : a(start(false)), b(start(true)), holder(corvid::client_config{}) {
    held_calls_may_end = false;
    if (auto e = corvid::sync_wait(holder.connect(endpoint(*b))))
      throw std::runtime_error(e.message());
    held = corvid::sync_wait(holder.send_request<work>(-1));
    held_other = corvid::sync_wait(holder.send_request<other>(-1));
    // `b` refuses from the moment the held calls run.
    EXPECT_TRUE(eventually([&] {
      auto r = corvid::sync_wait(holder.call<work>(1));
      auto q = corvid::sync_wait(holder.call<other>(1));
      return !r && r.error().code() == corvid::rpc_errc::server_busy && !q &&
             q.error().code() == corvid::rpc_errc::server_busy;
    }));
  }
  ~fleet() {
    held_calls_may_end = true;
    for (auto* h : {&held, &held_other}) {
      if (!*h || !**h) continue;
      corvid::sync_wait([](corvid::async_reply_t<work> reply) -> corvid::task<void> {
        (void)co_await std::move(reply);
      }(std::move(***h)));
    }
  }
  static std::unique_ptr<corvid::rpc_server> start(bool busy) {
    auto s = std::make_unique<corvid::rpc_server>(test_server::make_config());
    s->register_handler<work, other>();
    if (busy) {
      s->set_method_limit<work>(1);
      s->set_method_limit<other>(1);
    }
    if (auto e = s->async_start()) throw std::runtime_error(e.message());
    return s;
  }
  static std::string endpoint(const corvid::rpc_server& s) {
    return "127.0.0.1:" + std::to_string(s.port());
  }
  std::shared_ptr<corvid::load_balancer> balancer(corvid::retry_policy retry) const {
    corvid::lb_config cfg;
    cfg.follow_health = false;
    cfg.retry = std::move(retry);
    return corvid::load_balancer::create({{endpoint(*a)}, {endpoint(*b)}}, cfg);
  }

  std::unique_ptr<corvid::rpc_server> a, b;
  corvid::rpc_client holder;
  std::optional<corvid::expected<corvid::async_reply_t<work>, corvid::rpc_error>> held, held_other;
};

struct outcome {
  int ok = 0, busy = 0, other_errors = 0;
};

template <auto F>
outcome make_calls(corvid::load_balancer& lb, int n) {
  return corvid::sync_wait([](corvid::load_balancer& b, int calls) -> corvid::task<outcome> {
    outcome o;
    for (int i = 0; i < calls; ++i) {
      auto r = co_await b.call<F>(i);
      if (r && *r == i + 1) {
        ++o.ok;
      } else if (!r && r.error().code() == corvid::rpc_errc::server_busy) {
        ++o.busy;
      } else {
        ++o.other_errors;
      }
    }
    co_return o;
  }(lb, n));
}

corvid::retry_policy retries(double budget_tokens) {
  corvid::retry_policy p;
  p.max_attempts = 3;
  p.initial_backoff = 1ms;
  p.max_backoff = 2ms;
  p.budget.max_tokens = budget_tokens;
  p.idempotent<&work>();
  return p;
}

TEST(lb_retry, an_idempotent_call_refused_by_one_server_is_answered_by_another) {
  fleet f;
  auto lb = f.balancer(retries(0));  // no budget: every allowed retry goes
  const outcome o = make_calls<work>(*lb, 100);
  EXPECT_EQ(o.ok, 100) << o.busy << " refused, " << o.other_errors << " other errors";
  const auto s = lb->balancer_stats();
  EXPECT_GT(s.retries, 0u) << "round robin sends about half the calls to the refusing server";
  EXPECT_EQ(s.retries_throttled, 0u);
}

TEST(lb_retry, a_method_not_declared_idempotent_is_not_sent_again) {
  fleet f;
  auto lb = f.balancer(retries(0));
  const outcome o = make_calls<other>(*lb, 100);
  EXPECT_GT(o.busy, 0) << "the refusing server's answers reach the caller";
  EXPECT_EQ(o.ok + o.busy, 100) << o.other_errors << " other errors";
  EXPECT_EQ(lb->balancer_stats().retries, 0u);
}

TEST(lb_retry, the_budget_stops_retries_while_most_calls_fail) {
  fleet f;
  // Without a budget every refused call is retried; with gRPC's default (10 tokens, 0.1 back
  // per success) half the calls failing drains it, and retries stop.
  auto free = f.balancer(retries(0));
  auto budgeted = f.balancer(retries(10));
  make_calls<work>(*free, 200);
  const outcome o = make_calls<work>(*budgeted, 200);
  const auto unlimited = free->balancer_stats();
  const auto limited = budgeted->balancer_stats();
  EXPECT_GT(limited.retries_throttled, 0u);
  EXPECT_LT(limited.retries * 4, unlimited.retries)
      << limited.retries << " retries with the budget, " << unlimited.retries << " without";
  EXPECT_GT(o.busy, 0) << "throttled calls end with the refusal";
  EXPECT_EQ(o.other_errors, 0);
}

TEST(lb_retry, a_methods_own_entry_declares_it_idempotent_and_sets_its_attempts) {
  fleet f;
  corvid::retry_policy p;  // one attempt and no idempotent method by default
  p.initial_backoff = 1ms;
  p.max_backoff = 2ms;
  p.budget.max_tokens = 0;
  corvid::lb_config cfg;
  cfg.follow_health = false;
  cfg.retry = p;
  cfg.methods.set<&work>({.idempotent = true, .max_attempts = 3});
  auto lb = corvid::load_balancer::create({{fleet::endpoint(*f.a)}, {fleet::endpoint(*f.b)}}, cfg);
  const outcome o = make_calls<work>(*lb, 100);
  EXPECT_EQ(o.ok, 100) << o.busy << " refused, " << o.other_errors << " other errors";
  EXPECT_GT(lb->balancer_stats().retries, 0u);
  const outcome q = make_calls<other>(*lb, 100);  // no entry: not retried
  EXPECT_GT(q.busy, 0);
}

TEST(lb_retry, the_budget_holds_back_hedges_while_most_calls_fail) {
  fleet f;
  corvid::lb_config cfg;
  cfg.follow_health = false;
  cfg.retry.budget.max_tokens = 2;
  // A delay far longer than a refusal takes: a call sent to b first is refused before its
  // hedge is due (with no delay, a's answer to an immediate hedge could beat b's refusal in
  // every call under load, so no refusal would ever reach the budget).
  cfg.methods.set<&work>(
      {.idempotent = true, .hedging = corvid::hedging_policy{.max_copies = 2, .delay = 200ms}});
  auto lb = corvid::load_balancer::create({{fleet::endpoint(*f.a)}, {fleet::endpoint(*f.b)}}, cfg);
  // Refusals drain the budget (each takes a token); the copy that follows a refusal is a
  // hedge, and goes only while more than half of the budget is left, so most calls sent to b
  // first send no second copy and end refused.
  const outcome o = make_calls<work>(*lb, 100);
  const auto s = lb->balancer_stats();
  EXPECT_GT(s.hedges_throttled, 0u);
  EXPECT_EQ(o.ok + o.busy, 100) << o.other_errors << " other errors";
}

TEST(lb_retry, a_retry_never_runs_past_the_deadline) {
  fleet f;
  corvid::retry_policy p = retries(0);
  p.max_attempts = 50;
  p.initial_backoff = std::chrono::milliseconds(60000);  // every pause ends past the deadline
  p.max_backoff = std::chrono::milliseconds(60000);
  corvid::lb_config cfg;
  cfg.follow_health = false;
  cfg.retry = p;
  auto only_b = corvid::load_balancer::create({{fleet::endpoint(*f.b)}}, cfg);
  auto r = corvid::sync_wait(only_b->call_for<work>(std::chrono::milliseconds(2000), 1));
  // A pause of up to 60 s does not fit in 2 s but for a draw under 1/30: most calls answer
  // with the refusal at once; none waits out a pause past its deadline.
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().code() == corvid::rpc_errc::server_busy ||
              r.error().code() == corvid::rpc_errc::timeout)
      << r.error().message();
}

}  // namespace
}  // namespace corvid_test
