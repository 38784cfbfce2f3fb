// load_balancer's retry policy (lb_config::retry, retry_policy.hpp): the budget's book of
// outcomes, the decision to send a failed call again, and the pause before it. Only calls
// through a balancer whose policy allows more than one attempt come here.
#include <algorithm>
#include <cmath>
#include <random>

#include "corvid/client/load_balancer.hpp"
#include "corvid/runtime/sleep.hpp"

#include "../metrics/client_registry.hpp"
#include "client_metrics_access.hpp"

namespace corvid {

namespace {

constexpr auto relaxed = std::memory_order_relaxed;

}  // namespace

// The server refused the call for lack of room, or the connection went (before a reply) or
// never came up.
bool load_balancer::retryable(rpc_errc code) noexcept {
  return code == rpc_errc::server_busy || code == rpc_errc::connection_closed ||
         code == rpc_errc::connect_failed;
}

std::int64_t load_balancer::milli_tokens(double tokens) noexcept {
  return static_cast<std::int64_t>(std::llround(std::max(0.0, tokens) * 1000));
}

void load_balancer::note_attempt(rpc_errc code) noexcept {
  const auto& budget = config_.retry.budget;
  if (budget.max_tokens <= 0) return;
  const std::int64_t full = milli_tokens(budget.max_tokens);
  std::int64_t t = retry_tokens_.load(relaxed);
  if (code == rpc_errc::ok) {
    // Full already (the steady state of a healthy fleet): nothing is written.
    const std::int64_t back = milli_tokens(budget.token_ratio);
    while (t < full && !retry_tokens_.compare_exchange_weak(t, std::min(full, t + back), relaxed)) {
    }
  } else if (retryable(code)) {
    while (t > 0 &&
           !retry_tokens_.compare_exchange_weak(t, std::max<std::int64_t>(0, t - 1000), relaxed)) {
    }
  }
}

bool load_balancer::retry_allowed(std::uint32_t method, signed char idempotent,
                                  rpc_errc code) noexcept {
  if (!retryable(code)) return false;
  if (idempotent < 0 ? !config_.retry.is_idempotent(method) : idempotent == 0) return false;
  if (!budget_left()) {
    count(policy_count::retry_throttled);
    return false;
  }
  return true;
}

void load_balancer::count(policy_count c) noexcept {
  static_assert(static_cast<int>(policy_count::hedge_throttled) ==
                static_cast<int>(metrics::call_policy_event::hedge_throttled));
  policy_counts_[static_cast<std::size_t>(c)].fetch_add(1, relaxed);
  if (registry_ != nullptr) registry_->call_policy(static_cast<metrics::call_policy_event>(c));
}

bool load_balancer::hedge_allowed() noexcept {
  if (budget_left()) return true;
  count(policy_count::hedge_throttled);
  return false;
}

bool load_balancer::budget_left() const noexcept {
  const auto& budget = config_.retry.budget;
  return budget.max_tokens <= 0 ||
         2 * retry_tokens_.load(relaxed) > milli_tokens(budget.max_tokens);
}

std::chrono::milliseconds load_balancer::backoff(unsigned n) const {
  const auto& r = config_.retry;
  double step = static_cast<double>(r.initial_backoff.count()) *
                std::pow(std::max(1.0, r.backoff_multiplier), static_cast<double>(n - 1));
  step = std::min(step, static_cast<double>(r.max_backoff.count()));
  if (!(step > 0)) return std::chrono::milliseconds(0);
  // Full jitter (anywhere up to the step): retries of calls that failed together spread out
  // instead of arriving together again.
  thread_local std::minstd_rand rng{std::random_device{}()};
  std::uniform_real_distribution<double> d(0.0, step);
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(d(rng))));
}

task<void> load_balancer::wait(std::chrono::milliseconds d) { co_await sleep_for(d); }

}  // namespace corvid
