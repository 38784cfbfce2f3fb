#include "corvid/client/load_balancer.hpp"

#include <algorithm>

#include "client_metrics_access.hpp"

namespace corvid {

using steady = std::chrono::steady_clock;

std::shared_ptr<load_balancer> load_balancer::create(std::vector<lb_endpoint> endpoints,
                                                     lb_config config) {
  std::shared_ptr<load_balancer> lb(new load_balancer(std::move(config)));
  for (auto& e : endpoints) lb->add_endpoint(std::move(e));
  return lb;
}

void load_balancer::add_endpoint(lb_endpoint endpoint) {
  auto n = std::make_shared<node>();
  n->pool = client_pool::create(endpoint.address, config_.pool);
  // config_ holds the metrics object, and so the counters, for the balancer's lifetime.
  if (auto* r = detail::client_metrics_access::registry(config_.pool.client.metrics)) {
    n->metrics = &r->balancer(endpoint.address);
  }
  n->endpoint = std::move(endpoint);
  if (n->endpoint.weight == 0) n->endpoint.weight = 1;
  std::lock_guard lk(mutex_);
  nodes_.push_back(std::move(n));
}

bool load_balancer::remove_endpoint(const std::string& address) {
  std::lock_guard lk(mutex_);
  // Calls in flight hold their node (and so its pool) until they end.
  return std::erase_if(nodes_, [&](const auto& n) { return n->endpoint.address == address; }) > 0;
}

expected<load_balancer::picked, rpc_error> load_balancer::pick() {
  std::lock_guard lk(mutex_);
  if (nodes_.empty()) return unexpected(rpc_error(rpc_errc::connect_failed, "no endpoints"));
  const auto now = steady::now();
  std::vector<node*> healthy;
  healthy.reserve(nodes_.size());
  for (auto& n : nodes_) {
    if (n->ejected_until <= now && !n->probing) healthy.push_back(n.get());
  }
  auto shared = [&](node* raw, bool probe) {
    for (auto& n : nodes_) {
      if (n.get() == raw) return picked{n, probe};
    }
    return picked{};
  };
  // An ejected endpoint whose back-off has passed gets exactly one probe call.
  for (auto* n : healthy) {
    if (n->ejections > 0) {
      n->probing = true;
      return shared(n, true);
    }
  }
  if (healthy.empty()) {
    return unexpected(
        rpc_error(rpc_errc::connect_failed, "every endpoint is ejected after connection failures"));
  }
  node* chosen = nullptr;
  switch (config_.policy) {
    case lb_policy::round_robin:
      chosen = healthy[next_++ % healthy.size()];
      break;
    case lb_policy::weighted_round_robin: {
      // Smooth weighted round robin: spreads an endpoint's share evenly over time.
      long long total = 0;
      for (auto* n : healthy) {
        n->current_weight += n->endpoint.weight;
        total += n->endpoint.weight;
        if (chosen == nullptr || n->current_weight > chosen->current_weight) chosen = n;
      }
      chosen->current_weight -= total;
      break;
    }
    case lb_policy::random:
      chosen = healthy[std::uniform_int_distribution<std::size_t>(0, healthy.size() - 1)(rng_)];
      break;
    case lb_policy::power_of_two_choices: {
      std::uniform_int_distribution<std::size_t> d(0, healthy.size() - 1);
      node* a = healthy[d(rng_)];
      node* b = healthy[d(rng_)];
      chosen = a->in_flight.load(std::memory_order_relaxed) <=
                       b->in_flight.load(std::memory_order_relaxed)
                   ? a
                   : b;
      break;
    }
  }
  return shared(chosen, false);
}

void load_balancer::report(node& n, bool probe, rpc_errc result) {
  n.calls.fetch_add(1, std::memory_order_relaxed);
  // Only failures to reach the endpoint count against it; a handler error is an answer.
  const bool unreachable =
      result == rpc_errc::connect_failed || result == rpc_errc::connection_closed;
  const bool timed_out = result == rpc_errc::timeout;
  const auto now = steady::now();
  std::lock_guard lk(mutex_);
  if (probe) n.probing = false;
  if (!unreachable && !timed_out) {
    n.timeouts_in_a_row = 0;
    // A success restores the endpoint: a probe's, or one that was in flight when it was
    // ejected (the endpoint answered after all).
    n.ejections = 0;
    n.ejected_until = {};
    return;
  }
  n.failures.fetch_add(1, std::memory_order_relaxed);
  if (n.metrics != nullptr) n.metrics->failures.fetch_add(1, std::memory_order_relaxed);
  if (timed_out &&
      (config_.eject_after_timeouts == 0 || ++n.timeouts_in_a_row < config_.eject_after_timeouts)) {
    return;
  }
  // Calls in flight when the endpoint failed all fail together; while it is ejected they
  // belong to the same episode and must not stretch the back-off. A failed probe does.
  if (!probe && n.ejected_until > now) return;
  n.timeouts_in_a_row = 0;
  ++n.ejections;
  if (n.metrics != nullptr) n.metrics->ejections.fetch_add(1, std::memory_order_relaxed);
  const auto shift = std::min(n.ejections - 1, 16u);
  n.ejected_until = now + std::min(config_.eject_base * (1 << shift), config_.eject_max);
}

std::vector<lb_endpoint_stats> load_balancer::stats() const {
  std::lock_guard lk(mutex_);
  std::vector<lb_endpoint_stats> out;
  const auto now = steady::now();
  for (const auto& n : nodes_) {
    out.push_back({n->endpoint.address, n->calls.load(), n->failures.load(),
                   n->ejected_until > now || n->probing, n->in_flight.load()});
  }
  return out;
}

}  // namespace corvid
