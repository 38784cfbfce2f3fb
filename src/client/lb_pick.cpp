// load_balancer: the call path. pick() copies its reactor's hold on the published view
// (lb_view.hpp) and reads per-endpoint atomics: no balancer mutex
// (weighted_round_robin's smooth weights aside), no allocation. report() takes an
// endpoint's own mutex on failures only; probes of ejected endpoints run in the background
// unless a call has no other endpoint left.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "corvid/client/load_balancer.hpp"
#include "corvid/detail/detached.hpp"

#include "../discovery/endpoint_source.hpp"
#include "../metrics/endpoint_counters.hpp"
#include "background.hpp"
#include "lb_view.hpp"

namespace corvid {

namespace {

std::minstd_rand& thread_rng() {
  thread_local std::minstd_rand rng{std::random_device{}()};
  return rng;
}

// How picky a pass is; a pass that finds nobody gives way to the next.
enum level : int {
  answered_serving = 0,  // has answered, and its health watch does not say otherwise
  serving = 1,           // any that is not ejected and not saying not_serving
  any = 2,               // every endpoint says not serving: better to try them than fail
};

}  // namespace

void load_balancer::restore_locked(node& n) {
  if (n.ejections.exchange(0, std::memory_order_relaxed) != 0)
    ejected_.fetch_sub(1, std::memory_order_relaxed);
  n.ejected_until.store(0, std::memory_order_relaxed);
}

bool load_balancer::readmitted(node& n) {
  if (!n.health.serving_again.load(std::memory_order_relaxed)) return false;
  std::lock_guard lk(n.mutex);
  if (!n.health.serving_again.exchange(false, std::memory_order_relaxed)) return false;
  restore_locked(n);
  return true;
}

std::chrono::milliseconds load_balancer::left(std::optional<steady::time_point> deadline) {
  if (!deadline) return std::chrono::milliseconds(-1);
  const auto d = std::chrono::ceil<std::chrono::milliseconds>(*deadline - steady::now());
  return std::max(d, std::chrono::milliseconds(1));
}

expected<load_balancer::picked, rpc_error> load_balancer::pick(std::string_view hash_key,
                                                               const node* avoid,
                                                               steady::time_point now) {
  const std::size_t reactor = caller_reactor();
  auto v = load_view(reactor);
  if (v->hold_until != steady::time_point{} && now >= v->hold_until) {
    expire_hold(v.get());
    v = load_view(reactor);
  }
  if (v->nodes.empty()) return unexpected(rpc_error(rpc_errc::connect_failed, "no endpoints"));
  const auto ticks = now.time_since_epoch().count();
  // An ejected endpoint whose back-off has passed gets exactly one probe, in the background;
  // one whose watch has said serving since is back at once.
  node* waiting_probe = nullptr;
  if (ejected_.load(std::memory_order_relaxed) != 0)
    for (auto& sp : v->nodes) {
      node& n = *sp;
      if (n.ejections.load(std::memory_order_relaxed) == 0 || &n == avoid) continue;
      if (readmitted(n)) continue;
      if (n.ejected_until.load(std::memory_order_relaxed) > ticks) continue;
      if (n.probing.exchange(true, std::memory_order_relaxed)) continue;
      if (waiting_probe == nullptr) {
        waiting_probe = &n;  // kept back: this call may need it
      } else {
        start_probe(v, &n);
      }
    }
  for (int l = answered_serving; l <= any; ++l) {
    if (node* chosen = pick_among(*v, hash_key, avoid, now, l)) {
      if (waiting_probe != nullptr) start_probe(v, waiting_probe);
      return picked{std::move(v), chosen, false};
    }
  }
  if (waiting_probe != nullptr) return picked{std::move(v), waiting_probe, true};
  return unexpected(
      rpc_error(rpc_errc::connect_failed, "every endpoint is ejected after connection failures"));
}

load_balancer::node* load_balancer::pick_among(const view& v, std::string_view hash_key,
                                               const node* avoid, steady::time_point now, int l) {
  const auto ticks = now.time_since_epoch().count();
  auto usable = [&](const node& n) {
    if (&n == avoid || n.ejections.load(std::memory_order_relaxed) != 0 ||
        n.ejected_until.load(std::memory_order_relaxed) > ticks) {
      return false;
    }
    if (l < any && n.health.not_serving.load(std::memory_order_relaxed)) return false;
    return l > answered_serving || n.proven.load(std::memory_order_relaxed) ||
           n.health.watched.load(std::memory_order_relaxed);
  };
  const std::size_t size = v.nodes.size();
  // The k-th usable node (k below the count of usable ones), in the view's order.
  auto kth = [&](std::size_t k) -> node* {
    for (const auto& n : v.nodes) {
      if (usable(*n) && k-- == 0) return n.get();
    }
    return nullptr;
  };
  auto count = [&] {
    return static_cast<std::size_t>(
        std::count_if(v.nodes.begin(), v.nodes.end(), [&](const auto& n) { return usable(*n); }));
  };
  // A uniformly random usable node: a few direct draws (most are usable), then a count, made
  // once per pick (power of two choices draws twice; with most endpoints out, both miss).
  std::optional<std::size_t> usable_count;
  auto random_usable = [&]() -> node* {
    std::uniform_int_distribution<std::size_t> d(0, size - 1);
    for (int i = 0; i < 4; ++i) {
      node* n = v.nodes[d(thread_rng())].get();
      if (usable(*n)) return n;
    }
    if (!usable_count) usable_count = count();
    const std::size_t k = *usable_count;
    return k == 0 ? nullptr
                  : kth(std::uniform_int_distribution<std::size_t>(0, k - 1)(thread_rng()));
  };
  node* chosen = nullptr;
  switch (config_.policy) {
    case lb_policy::round_robin: {
      const std::size_t turn = next_.fetch_add(1, std::memory_order_relaxed);
      chosen = v.nodes[turn % size].get();
      if (!usable(*chosen)) {
        // Some are out: the turn among those that are in, so they share evenly.
        const std::size_t k = count();
        chosen = k == 0 ? nullptr : kth(turn % k);
      }
      break;
    }
    case lb_policy::weighted_round_robin: {
      // Smooth weighted round robin: spreads an endpoint's share evenly over time. Its
      // weights are shared state: the one policy whose pick takes a lock.
      std::lock_guard lk(wrr_mutex_);
      long long total = 0;
      for (const auto& sp : v.nodes) {
        node& n = *sp;
        if (!usable(n)) continue;
        const auto w = static_cast<long long>(n.weight.load(std::memory_order_relaxed));
        n.current_weight += w;
        total += w;
        if (chosen == nullptr || n.current_weight > chosen->current_weight) chosen = &n;
      }
      if (chosen != nullptr) chosen->current_weight -= total;
      break;
    }
    case lb_policy::random:
      chosen = random_usable();
      break;
    case lb_policy::consistent_hash:
      if (!hash_key.empty() && !v.ring.empty()) {
        std::size_t total = 0, healthy = 0;
        for (const auto& n : v.nodes) {
          if (!usable(*n)) continue;
          ++healthy;
          total += n->in_flight.load(std::memory_order_relaxed);
        }
        if (healthy == 0) return nullptr;
        // Bounded load: at most ceil(c * average) calls in flight, this one counted.
        const auto cap = static_cast<std::size_t>(
            std::ceil(std::max(1.0, config_.hash_load_factor) * static_cast<double>(total + 1) /
                      static_cast<double>(healthy)));
        // A key whose next 512 points all belong to refused endpoints (a registry flooded
        // with endpoints that never answered) goes by the rule for calls without a key.
        const auto i = v.ring.find(
            detail::hash_ring::hash(hash_key),
            [&](std::size_t owner) {
              const node& n = *v.nodes[owner];
              return usable(n) && n.in_flight.load(std::memory_order_relaxed) + 1 <= cap;
            },
            512);
        if (i >= 0) {
          chosen = v.nodes[static_cast<std::size_t>(i)].get();
          break;
        }
      }
      [[fallthrough]];  // no key: power of two choices
    case lb_policy::power_of_two_choices: {
      node* a = random_usable();
      if (a == nullptr) return nullptr;
      node* b = random_usable();
      chosen = b != nullptr && b->in_flight.load(std::memory_order_relaxed) <
                                   a->in_flight.load(std::memory_order_relaxed)
                   ? b
                   : a;
      break;
    }
  }
  // Counted at once: concurrent picks see each other's calls (the load bound).
  if (chosen != nullptr) chosen->in_flight.fetch_add(1, std::memory_order_relaxed);
  return chosen;
}

void load_balancer::start_probe(std::shared_ptr<const view> v, node* n) {
  [](std::weak_ptr<load_balancer> weak, std::shared_ptr<const view> held, node* target,
     std::chrono::milliseconds timeout) -> detail::detached {
    const detail::background_work counted;
    auto self = weak.lock();
    if (!self) co_return;
    try {
      (void)co_await self->probe(std::move(held), target, timeout);
    } catch (...) {
      target->probing.store(false, std::memory_order_relaxed);  // out of memory: again later
    }
  }(weak_from_this(), std::move(v), n, std::chrono::milliseconds(-1));
}

task<bool> load_balancer::probe(std::shared_ptr<const view> v, node* n,
                                std::chrono::milliseconds timeout) {
  auto probe_timeout = std::max(config_.eject_base, std::chrono::milliseconds(100));
  if (timeout.count() > 0) probe_timeout = std::min(probe_timeout, timeout);
  auto r = co_await n->pool->call_for<&health_service::check>(probe_timeout);
  // A server from before the health method still answered: it is reachable.
  const bool reachable = r || r.error().code() == rpc_errc::function_not_found;
  const bool serving = !r || *r == health_status::serving;
  n->health.not_serving.store(reachable && !serving, std::memory_order_relaxed);
  // Unanswered (timeout included) re-ejects it, with a longer back-off.
  report(*n, true, reachable ? rpc_errc::ok : rpc_errc::connect_failed);
  (void)v;  // held until here: the node outlives the probe
  co_return reachable&& serving;
}

void load_balancer::report(node& n, bool probe, rpc_errc result) {
  n.calls.fetch_add(1, std::memory_order_relaxed);
  // Only failures to reach the endpoint count against it; a handler error is an answer.
  const bool unreachable =
      result == rpc_errc::connect_failed || result == rpc_errc::connection_closed;
  const bool timed_out = result == rpc_errc::timeout;
  if (!unreachable && !timed_out) {
    if (!n.proven.load(std::memory_order_relaxed)) n.proven.store(true, std::memory_order_relaxed);
    if (n.timeouts_in_a_row.load(std::memory_order_relaxed) != 0)
      n.timeouts_in_a_row.store(0, std::memory_order_relaxed);
    // A success restores the endpoint: a probe's, or one that was in flight when it was
    // ejected (the endpoint answered after all).
    if (n.ejections.load(std::memory_order_relaxed) != 0 || probe) {
      std::lock_guard lk(n.mutex);
      restore_locked(n);
      if (probe) n.probing.store(false, std::memory_order_relaxed);
    }
    return;
  }
  n.failures.fetch_add(1, std::memory_order_relaxed);
  if (n.metrics != nullptr) n.metrics->failures.fetch_add(1, std::memory_order_relaxed);
  if (auto* source = source_ptr_.load(std::memory_order_acquire); unreachable && source)
    source->refresh_soon();  // DNS: look the name up again
  const auto now = steady::now().time_since_epoch().count();
  std::lock_guard lk(n.mutex);
  if (probe) n.probing.store(false, std::memory_order_relaxed);
  if (n.removed.load(std::memory_order_relaxed)) return;  // no longer picked: nothing to eject
  if (timed_out && (config_.eject_after_timeouts == 0 ||
                    n.timeouts_in_a_row.fetch_add(1, std::memory_order_relaxed) + 1 <
                        config_.eject_after_timeouts)) {
    return;
  }
  // Calls in flight when the endpoint failed all fail together; while it is ejected they
  // belong to the same episode and must not stretch the back-off. A failed probe does.
  if (!probe && n.ejected_until.load(std::memory_order_relaxed) > now) return;
  n.timeouts_in_a_row.store(0, std::memory_order_relaxed);
  // What its watch said before this failure does not bring it back; what it says next does.
  n.health.serving_again.store(false, std::memory_order_relaxed);
  const unsigned ejections = n.ejections.fetch_add(1, std::memory_order_relaxed) + 1;
  if (ejections == 1) ejected_.fetch_add(1, std::memory_order_relaxed);
  if (n.metrics != nullptr) n.metrics->ejections.fetch_add(1, std::memory_order_relaxed);
  const auto shift = std::min(ejections - 1, 16u);
  const auto backoff = std::min(config_.eject_base * (1 << shift), config_.eject_max);
  n.ejected_until.store(now + std::chrono::duration_cast<steady::duration>(backoff).count(),
                        std::memory_order_relaxed);
}

}  // namespace corvid
