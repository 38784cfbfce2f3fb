// load_balancer: membership. Every change (add, remove, a discovery update) builds a new view
// under mutex_ and publishes it; calls (lb_pick.cpp) only ever load the current view.
#include "corvid/client/load_balancer.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "corvid/detail/detached.hpp"
#include "corvid/runtime/io_pool.hpp"

#include "../discovery/endpoint_source.hpp"
#include "../runtime/asio_all.hpp"
#include "background.hpp"
#include "client_metrics_access.hpp"
#include "health_follower.hpp"
#include "latency_windows.hpp"
#include "lb_view.hpp"
#include "reactor_index.hpp"

namespace corvid {

std::mutex& view_lock(const void* balancer) noexcept {
  static std::array<std::mutex, 64> locks;
  return locks[(reinterpret_cast<std::uintptr_t>(balancer) >> 6) % locks.size()];
}

load_balancer::load_balancer(lb_config config)
    : config_(std::move(config)),
      view_(std::make_shared<const view>()),
      reactor_views_(std::make_shared<reactor_views>()),
      retry_tokens_(milli_tokens(config_.retry.budget.max_tokens)) {
  io_pool& reactors =
      config_.pool.client.pool ? *config_.pool.client.pool : io_pool::default_pool();
  for (std::size_t i = 0; i < reactors.size(); ++i) {
    reactor_views_->reactors.push_back(&reactors.at(i));
  }
  reactor_views_->holds = std::make_unique<reactor_views::hold[]>(reactors.size());
  registry_ = detail::client_metrics_access::registry(config_.pool.client.metrics);
  if (config_.methods.uses_delay_quantile()) {
    latencies_ = std::make_unique<detail::latency_windows>();
  }
}

std::size_t load_balancer::caller_reactor() const noexcept {
  static_assert(no_reactor == detail::no_reactor_index);
  return detail::caller_reactor_index(reactor_views_->reactors);
}

std::shared_ptr<const load_balancer::view> load_balancer::load_view(std::size_t reactor) {
  if (reactor == no_reactor) return locked_load(view_, this);
  auto& h = reactor_views_->holds[reactor];
  // Read before the view: a view loaded after this generation is at least as new.
  const auto g = generation_.load(std::memory_order_acquire);
  if (h.generation != g || !h.v) {
    auto holder = std::make_shared<std::shared_ptr<const view>>(locked_load(view_, this));
    const view* v = holder->get();
    h.v = std::shared_ptr<const view>(std::move(holder), v);
    h.generation = g;
  }
  return h.v;
}

load_balancer::~load_balancer() {
  source_.reset();  // its thread hands endpoints to this balancer: it goes first
  // Each watch ends on its reactor soon after; it holds its node (and pool) until then.
  for (auto& n : locked_load(view_, this)->nodes) retire(*n);
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
  lb->source_ptr_.store(lb->source_.get(), std::memory_order_release);
  co_return lb;
}

namespace {

// Until a joining endpoint has answered once it takes calls only when no endpoint that has
// is usable. Its pool's first connect is the answer; after a failed one, its health watch
// (lb_config::follow_health) or a call that succeeds is. One attempt, so nothing is left
// waiting on a timer when the node or the process goes.
template <class Node>
detail::detached warm_up(std::weak_ptr<Node> weak, std::shared_ptr<client_pool> pool) {
  const detail::background_work counted;
  bool ok = false;
  try {
    auto lease = co_await pool->acquire();
    ok = lease.has_value();
  } catch (...) {
    ok = false;  // out of memory: its watch or a call proves it later
  }
  if (!ok) co_return;
  if (auto n = weak.lock()) n->proven.store(true, std::memory_order_relaxed);
}

}  // namespace

load_balancer::node::~node() {
  if (metrics != nullptr) registry->release(*metrics);
}

std::shared_ptr<load_balancer::node> load_balancer::make_node(lb_endpoint endpoint, bool trusted) {
  auto n = std::make_shared<node>();
  n->pool = client_pool::create(endpoint.address, config_.pool);
  // config_ holds the metrics object, and so the counters, for the balancer's lifetime.
  if (auto* r = detail::client_metrics_access::registry(config_.pool.client.metrics)) {
    n->metrics = &r->balancer(endpoint.address);
    n->registry = r;
  }
  n->endpoint = std::move(endpoint);
  if (n->endpoint.weight == 0) n->endpoint.weight = 1;
  if (n->endpoint.id.empty()) n->endpoint.id = n->endpoint.address;
  n->weight.store(n->endpoint.weight, std::memory_order_relaxed);
  n->proven.store(trusted, std::memory_order_relaxed);
  follow(n);
  if (!trusted) warm_up(std::weak_ptr<node>(n), n->pool);
  return n;
}

void load_balancer::follow(const std::shared_ptr<node>& n) {
  if (!config_.follow_health) return;
  // The follower holds the node through its health (the aliasing constructor) until it stops.
  n->follower = detail::health_follower::start(
      n->pool, std::shared_ptr<detail::endpoint_health>(n, &n->health), config_.pool);
}

void load_balancer::retire(node& n) {
  {
    std::lock_guard lk(n.mutex);
    n.removed.store(true, std::memory_order_relaxed);
    restore_locked(n);  // out of every view from now: its ejection counts no more
  }
  if (n.follower) n.follower->stop();
}

void load_balancer::publish_locked(std::vector<std::shared_ptr<node>> nodes,
                                   steady::time_point hold_until) {
  // A stable order (by id): round robin and the ring do not depend on hand-over order.
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a->endpoint.id < b->endpoint.id; });
  auto v = std::make_shared<view>();
  if (config_.policy == lb_policy::consistent_hash) {
    const std::size_t per_endpoint = detail::hash_ring::points_for(nodes.size());
    std::vector<const std::string*> ids;
    std::vector<const std::vector<std::uint64_t>*> positions;
    ids.reserve(nodes.size());
    positions.reserve(nodes.size());
    for (const auto& n : nodes) {
      if (n->ring_id != n->endpoint.id) {
        n->ring_points.clear();
        n->ring_id = n->endpoint.id;
      }
      // Fewer points than it has (the ring has grown past a step): the first ones are kept.
      if (n->ring_points.size() > 2 * per_endpoint) n->ring_points.resize(per_endpoint);
      detail::hash_ring::extend_points(n->ring_id, per_endpoint, n->ring_points);
      ids.push_back(&n->ring_id);
      positions.push_back(&n->ring_points);
    }
    v->ring.build(ids, positions);
  }
  v->nodes = std::move(nodes);
  v->hold_until = hold_until;
  locked_store(view_, std::move(v), this);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  // Each reactor lets its hold go on its own thread; the holds outlive the balancer if need
  // be, and a replaced view goes once the last call on it ends.
  auto& rv = *reactor_views_;
  for (std::size_t i = 0; i < rv.reactors.size(); ++i) {
    asio::post(*rv.reactors[i], [views = reactor_views_, i] { views->holds[i].v.reset(); });
  }
}

bool load_balancer::add_endpoint(lb_endpoint endpoint) {
  std::lock_guard lk(mutex_);
  auto nodes = locked_load(view_, this)->nodes;
  const bool known = std::any_of(nodes.begin(), nodes.end(), [&](const auto& n) {
    return n->endpoint.address == endpoint.address;
  });
  if (known) return false;
  if (nodes.size() >= config_.max_endpoints) {
    count_over_limit(1);
    return false;
  }
  nodes.push_back(make_node(std::move(endpoint), true));  // named by the user: trusted
  publish_locked(std::move(nodes), {});
  return true;
}

bool load_balancer::remove_endpoint(const std::string& address) {
  std::vector<std::shared_ptr<node>> gone;
  {
    std::lock_guard lk(mutex_);
    auto nodes = locked_load(view_, this)->nodes;
    // Calls in flight hold the view they picked from (and so the node) until they end.
    std::erase_if(nodes, [&](const auto& n) {
      if (n->endpoint.address != address) return false;
      gone.push_back(n);
      return true;
    });
    if (!gone.empty()) publish_locked(std::move(nodes), {});
  }
  for (auto& n : gone) retire(*n);
  return !gone.empty();
}

void load_balancer::set_endpoints(std::vector<lb_endpoint> endpoints) {
  // One node per address (a restarted server may briefly be registered twice); an endpoint
  // that stays keeps its node: its pool, connections and ejection state.
  std::unordered_map<std::string, lb_endpoint> wanted;
  std::vector<std::string> order;  // the source's order, for who gets the free places
  for (auto& e : endpoints) {
    if (e.id.empty()) e.id = e.address;
    std::string address = e.address;
    if (wanted.try_emplace(address, std::move(e)).second) order.push_back(std::move(address));
  }
  std::vector<std::shared_ptr<node>> gone;
  std::size_t over_limit = 0;         // newly turned away
  std::size_t listed_over_limit = 0;  // turned away in all
  {
    std::lock_guard lk(mutex_);
    auto current = locked_load(view_, this);
    if (wanted.empty() && !current->nodes.empty() && config_.empty_update_grace.count() > 0) {
      // A registry that lost its leases for a moment, or a file caught half-written: keep
      // serving with what worked until the grace ends or a non-empty update arrives.
      if (current->hold_until == steady::time_point{}) {
        empty_updates_held_.fetch_add(1, std::memory_order_relaxed);
        if (auto* r = detail::client_metrics_access::registry(config_.pool.client.metrics))
          r->empty_update_held();
        std::fprintf(
            stderr, "corvid: discovery listed no endpoint; keeping the last %zu for %lld ms\n",
            current->nodes.size(), static_cast<long long>(config_.empty_update_grace.count()));
        publish_locked(current->nodes, steady::now() + config_.empty_update_grace);
      }
      return;
    }
    // The balancer's first endpoints are all it has: they are trusted. Later ones earn calls.
    const bool first = current->nodes.empty();
    std::vector<std::shared_ptr<node>> nodes;
    nodes.reserve(std::min(wanted.size(), config_.max_endpoints));
    for (const auto& n : current->nodes) {
      auto it = wanted.find(n->endpoint.address);
      if (it == wanted.end()) {
        gone.push_back(n);
        continue;
      }
      n->weight.store(std::max(1u, it->second.weight), std::memory_order_relaxed);
      n->endpoint.weight = std::max(1u, it->second.weight);
      // Another instance at the same address (a restarted server): its watch need not wait
      // out the back-off it built up while the old one went away.
      if (n->endpoint.id != it->second.id && n->follower) n->follower->retry_now();
      n->endpoint.id = it->second.id;
      wanted.erase(it);
      nodes.push_back(n);  // endpoints already followed keep their place before new ones
    }
    // Turned away: counted (and written) once each while they stay listed, not per update.
    std::unordered_set<std::string> turned_away;
    for (const auto& address : order) {
      auto it = wanted.find(address);
      if (it == wanted.end()) continue;
      if (nodes.size() >= config_.max_endpoints) {
        if (!over_limit_.contains(address)) ++over_limit;
        turned_away.insert(address);
        continue;
      }
      nodes.push_back(make_node(std::move(it->second), first));
    }
    listed_over_limit = turned_away.size();
    over_limit_ = std::move(turned_away);
    publish_locked(std::move(nodes), {});
  }
  if (over_limit > 0) {
    count_over_limit(over_limit);
    std::fprintf(stderr,
                 "corvid: discovery listed %zu endpoint(s) over lb_config::max_endpoints (%zu), "
                 "%zu of them new; they are not followed\n",
                 listed_over_limit, config_.max_endpoints, over_limit);
  }
  for (auto& n : gone) retire(*n);
}

void load_balancer::count_over_limit(std::size_t n) {
  rejected_over_limit_.fetch_add(n, std::memory_order_relaxed);
  if (auto* r = detail::client_metrics_access::registry(config_.pool.client.metrics))
    r->discovery_rejected(metrics::discovery_reject::over_limit, n);
}

void load_balancer::expire_hold(const view* held) {
  std::vector<std::shared_ptr<node>> gone;
  {
    std::lock_guard lk(mutex_);
    auto current = locked_load(view_, this);
    if (current.get() != held) return;  // an update came first
    gone = current->nodes;
    publish_locked({}, {});
  }
  for (auto& n : gone) retire(*n);
}

std::vector<lb_endpoint> load_balancer::endpoints() const {
  std::lock_guard lk(mutex_);  // ids and weights change under it
  std::vector<lb_endpoint> out;
  for (const auto& n : locked_load(view_, this)->nodes) out.push_back(n->endpoint);
  return out;
}

lb_stats load_balancer::balancer_stats() const {
  auto v = locked_load(view_, this);
  lb_stats s;
  s.endpoints = v->nodes.size();
  s.rejected_over_limit = rejected_over_limit_.load(std::memory_order_relaxed);
  s.empty_updates_held = empty_updates_held_.load(std::memory_order_relaxed);
  s.holding_empty_update = v->hold_until != steady::time_point{};
  auto n = [&](policy_count c) {
    return policy_counts_[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
  };
  s.retries = n(policy_count::retry);
  s.retries_throttled = n(policy_count::retry_throttled);
  s.hedges = n(policy_count::hedge);
  s.hedges_won = n(policy_count::hedge_won);
  s.hedges_throttled = n(policy_count::hedge_throttled);
  return s;
}

std::vector<lb_endpoint_stats> load_balancer::stats() const {
  auto v = locked_load(view_, this);
  std::vector<lb_endpoint_stats> out;
  const auto now = steady::now().time_since_epoch().count();
  for (const auto& n : v->nodes) {
    out.push_back({n->endpoint.address, n->calls.load(), n->failures.load(),
                   n->ejected_until.load() > now || n->probing.load(), n->in_flight.load(),
                   n->health.not_serving.load(), n->health.watched.load(), n->proven.load()});
  }
  return out;
}

}  // namespace corvid
