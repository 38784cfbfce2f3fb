#include "corvid/client/load_balancer.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "../discovery/endpoint_source.hpp"
#include "client_metrics_access.hpp"
#include "hash_ring.hpp"
#include "health_follower.hpp"

namespace corvid {

using steady = std::chrono::steady_clock;

load_balancer::load_balancer(lb_config config)
    : config_(std::move(config)), ring_(std::make_unique<detail::hash_ring>()) {}

load_balancer::~load_balancer() {
  source_.reset();  // its thread hands endpoints to this balancer: it goes first
  // Each watch ends on its reactor soon after; it holds its node (and pool) until then.
  for (auto& n : nodes_) unfollow(*n);
}

std::shared_ptr<load_balancer> load_balancer::create(std::vector<lb_endpoint> endpoints,
                                                     lb_config config) {
  std::shared_ptr<load_balancer> lb(new load_balancer(std::move(config)));
  for (auto& e : endpoints) lb->add_endpoint(std::move(e));
  return lb;
}

task<expected<std::shared_ptr<load_balancer>, rpc_error>> load_balancer::open(std::string url,
                                                                              lb_config config) {
  std::shared_ptr<load_balancer> lb(new load_balancer(std::move(config)));
  auto source = discovery::open_source(url, lb->config_,
                                       [raw = lb.get()](std::vector<lb_endpoint> endpoints) {
                                         raw->set_endpoints(std::move(endpoints));
                                       });
  if (!source) co_return unexpected(std::move(source).error());
  lb->source_ = std::move(*source);
  co_return lb;
}

std::shared_ptr<load_balancer::node> load_balancer::make_node(lb_endpoint endpoint) {
  auto n = std::make_shared<node>();
  n->pool = client_pool::create(endpoint.address, config_.pool);
  // config_ holds the metrics object, and so the counters, for the balancer's lifetime.
  if (auto* r = detail::client_metrics_access::registry(config_.pool.client.metrics)) {
    n->metrics = &r->balancer(endpoint.address);
  }
  n->endpoint = std::move(endpoint);
  if (n->endpoint.weight == 0) n->endpoint.weight = 1;
  if (n->endpoint.id.empty()) n->endpoint.id = n->endpoint.address;
  follow(n);
  return n;
}

void load_balancer::follow(const std::shared_ptr<node>& n) {
  if (!config_.follow_health) return;
  // The follower holds the node through its health (the aliasing constructor) until it stops.
  n->follower = detail::health_follower::start(
      n->pool, std::shared_ptr<detail::endpoint_health>(n, &n->health), config_.pool);
}

void load_balancer::unfollow(node& n) {
  if (n.follower) n.follower->stop();
}

bool load_balancer::readmitted(node& n) {
  if (!n.health.serving_again.exchange(false, std::memory_order_relaxed)) return false;
  n.ejections = 0;
  n.ejected_until = {};
  return true;
}

void load_balancer::rebuild_ring_locked() {
  if (config_.policy != lb_policy::consistent_hash) return;
  std::vector<std::string> ids;
  ids.reserve(nodes_.size());
  for (const auto& n : nodes_) ids.push_back(n->endpoint.id);
  ring_->build(ids);
}

void load_balancer::add_endpoint(lb_endpoint endpoint) {
  auto n = make_node(std::move(endpoint));
  std::lock_guard lk(mutex_);
  nodes_.push_back(std::move(n));
  rebuild_ring_locked();
}

bool load_balancer::remove_endpoint(const std::string& address) {
  std::vector<std::shared_ptr<node>> gone;
  {
    std::lock_guard lk(mutex_);
    // Calls in flight hold their node (and so its pool) until they end.
    std::erase_if(nodes_, [&](const auto& n) {
      if (n->endpoint.address != address) return false;
      gone.push_back(n);
      return true;
    });
    if (!gone.empty()) rebuild_ring_locked();
  }
  for (auto& n : gone) unfollow(*n);
  return !gone.empty();
}

void load_balancer::set_endpoints(std::vector<lb_endpoint> endpoints) {
  // One node per address (a restarted server may briefly be registered twice); an endpoint
  // that stays keeps its node: its pool, connections and ejection state.
  std::unordered_map<std::string, lb_endpoint> wanted;
  for (auto& e : endpoints) {
    if (e.id.empty()) e.id = e.address;
    wanted.try_emplace(e.address, std::move(e));
  }
  std::vector<std::shared_ptr<node>> gone;
  {
    std::lock_guard lk(mutex_);
    std::erase_if(nodes_, [&](const auto& n) {
      if (wanted.contains(n->endpoint.address)) return false;
      gone.push_back(n);
      return true;
    });
    for (auto& n : nodes_) {
      auto it = wanted.find(n->endpoint.address);
      n->endpoint.weight = std::max(1u, it->second.weight);
      // Another instance at the same address (a restarted server): its watch need not wait
      // out the back-off it built up while the old one went away.
      if (n->endpoint.id != it->second.id && n->follower) n->follower->retry_now();
      n->endpoint.id = it->second.id;
      wanted.erase(it);
    }
    for (auto& [address, e] : wanted) nodes_.push_back(make_node(std::move(e)));
    // A stable order (by id): round robin and the ring do not depend on hand-over order.
    std::sort(nodes_.begin(), nodes_.end(),
              [](const auto& a, const auto& b) { return a->endpoint.id < b->endpoint.id; });
    rebuild_ring_locked();
  }
  for (auto& n : gone) unfollow(*n);
}

std::vector<lb_endpoint> load_balancer::endpoints() const {
  std::lock_guard lk(mutex_);
  std::vector<lb_endpoint> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n->endpoint);
  return out;
}

expected<load_balancer::picked, rpc_error> load_balancer::pick(std::string_view hash_key,
                                                               const node* avoid) {
  std::lock_guard lk(mutex_);
  if (nodes_.empty()) return unexpected(rpc_error(rpc_errc::connect_failed, "no endpoints"));
  const auto now = steady::now();
  std::vector<node*> healthy;
  healthy.reserve(nodes_.size());
  for (auto& n : nodes_) {
    n->usable = (n->ejected_until <= now || readmitted(*n)) && !n->probing && n.get() != avoid &&
                !n->health.not_serving.load(std::memory_order_relaxed);
    if (n->usable) healthy.push_back(n.get());
  }
  if (healthy.empty()) {
    // Every endpoint says it is not serving (or draining): better to try them than to fail
    // every call here.
    for (auto& n : nodes_) {
      n->usable = (n->ejected_until <= now || readmitted(*n)) && !n->probing && n.get() != avoid;
      if (n->usable) healthy.push_back(n.get());
    }
  }
  auto shared = [&](node* raw, bool probe) {
    for (auto& n : nodes_) {
      if (n.get() == raw) return picked{n, probe};
    }
    return picked{};
  };
  // An ejected endpoint whose back-off has passed gets exactly one probe.
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
    case lb_policy::consistent_hash:
      if (!hash_key.empty() && !ring_->empty()) {
        std::size_t total = 0;
        for (auto* n : healthy) total += n->in_flight.load(std::memory_order_relaxed);
        // Bounded load: at most ceil(c * average) calls in flight, this one counted.
        const auto cap = static_cast<std::size_t>(
            std::ceil(std::max(1.0, config_.hash_load_factor) * static_cast<double>(total + 1) /
                      static_cast<double>(healthy.size())));
        const auto i = ring_->find(detail::hash_ring::hash(hash_key), [&](std::size_t owner) {
          const node& n = *nodes_[owner];
          return n.usable && n.in_flight.load(std::memory_order_relaxed) + 1 <= cap;
        });
        if (i >= 0) {
          chosen = nodes_[static_cast<std::size_t>(i)].get();
          break;
        }
      }
      [[fallthrough]];  // no key: power of two choices
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
  // Counted here, under the lock: concurrent picks see each other's calls (the load bound).
  chosen->in_flight.fetch_add(1, std::memory_order_relaxed);
  return shared(chosen, false);
}

task<bool> load_balancer::probe(std::shared_ptr<node> n) {
  const auto timeout = std::max(config_.eject_base, std::chrono::milliseconds(100));
  auto r = co_await n->pool->call_for<&health_service::check>(timeout);
  // A server from before the health method still answered: it is reachable.
  const bool reachable = r || r.error().code() == rpc_errc::function_not_found;
  const bool serving = !r || *r == health_status::serving;
  n->health.not_serving.store(reachable && !serving, std::memory_order_relaxed);
  // Unanswered (timeout included) re-ejects it, with a longer back-off.
  report(*n, true, reachable ? rpc_errc::ok : rpc_errc::connect_failed);
  co_return reachable&& serving;
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
  if (unreachable && source_) source_->refresh_soon();  // DNS: look the name up again
  if (timed_out &&
      (config_.eject_after_timeouts == 0 || ++n.timeouts_in_a_row < config_.eject_after_timeouts)) {
    return;
  }
  // Calls in flight when the endpoint failed all fail together; while it is ejected they
  // belong to the same episode and must not stretch the back-off. A failed probe does.
  if (!probe && n.ejected_until > now) return;
  n.timeouts_in_a_row = 0;
  // What its watch said before this failure does not bring it back; what it says next does.
  n.health.serving_again.store(false, std::memory_order_relaxed);
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
                   n->ejected_until > now || n->probing, n->in_flight.load(),
                   n->health.not_serving.load(), n->health.watched.load()});
  }
  return out;
}

}  // namespace corvid
