#include "client_registry.hpp"

#include <algorithm>

#include "client_recorder.hpp"

namespace corvid::metrics {
namespace {

// Adds one connection's stats of a method to `t` (its latency read before its calls, so
// calls minus ended is never below 0).
void add(method_totals& t, const client_method_stats& s) {
  if (t.buckets.empty()) {
    t.name = s.name;
    t.buckets.assign(latency_histogram::bucket_count, 0);
  }
  t.latency_count += s.latency.count();
  t.calls += s.calls.get();
  t.request_bytes += s.request_bytes.get();
  t.reply_bytes += s.reply_bytes.get();
  for (std::size_t c = 0; c < errc_count; ++c) t.errors[c] += s.errors[c].get();
  for (std::size_t b = 0; b < latency_histogram::bucket_count; ++b) {
    t.buckets[b] += s.latency.bucket(b);
  }
  t.latency_sum_ns += s.latency.sum_ns();
}

}  // namespace

void client_registry::attach(const client_recorder* r) {
  std::lock_guard lk(mutex_);
  live_.push_back(r);
}

void client_registry::retire(const client_recorder* r) {
  std::lock_guard lk(mutex_);
  std::erase(live_, r);
  r->table().for_each([&](const client_method_stats& s) { add(retired_[s.id], s); });
}

client_method_stats* client_registry::create(client_method_table& table, std::uint32_t id,
                                             std::string_view name) {
  std::lock_guard lk(mutex_);  // a scrape may be walking the table
  return table.insert(id, name);
}

namespace {
std::int64_t now_ticks() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
}  // namespace

template <class Counters>
Counters& client_registry::use(std::map<std::string, std::unique_ptr<Counters>>& entries,
                               const std::string& endpoint) {
  std::lock_guard lk(mutex_);
  auto it = entries.find(endpoint);
  if (it == entries.end()) {
    if (entries.size() >= max_endpoint_series_) prune_locked();
    const bool room = entries.size() < max_endpoint_series_;
    it = entries.try_emplace(room ? endpoint : std::string("other")).first;
    if (!it->second) it->second = std::make_unique<Counters>();
  }
  it->second->users.fetch_add(1, std::memory_order_relaxed);
  return *it->second;
}

pool_counters& client_registry::pool(const std::string& endpoint) { return use(pools_, endpoint); }

lb_counters& client_registry::balancer(const std::string& endpoint) {
  return use(balancers_, endpoint);
}

void client_registry::release(series_use& entry) noexcept {
  // Stamped before the count drops: a prune that sees 0 users sees this time too.
  entry.unused_since.store(now_ticks(), std::memory_order_relaxed);
  entry.users.fetch_sub(1, std::memory_order_release);
}

void client_registry::prune_locked() const {
  const auto linger =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(endpoint_linger_).count();
  const auto now = now_ticks();
  auto unused = [&](const auto& kv) {
    return kv.second->users.load(std::memory_order_acquire) == 0 &&
           now - kv.second->unused_since.load(std::memory_order_relaxed) >= linger;
  };
  std::erase_if(pools_, unused);
  std::erase_if(balancers_, unused);
}

client_snapshot client_registry::snapshot() const {
  client_snapshot out;
  out.connects_ok = connects_ok_.load(std::memory_order_relaxed);
  out.connects_failed = connects_failed_.load(std::memory_order_relaxed);
  out.discovery_rejected = discovery_rejected_.load();
  out.empty_updates_held = empty_updates_held_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < call_policy_event_count; ++i) {
    out.call_policies[i] = call_policies_[i].load(std::memory_order_relaxed);
  }
  std::map<std::uint32_t, client_method_row> rows;
  {
    std::lock_guard lk(mutex_);
    prune_locked();
    for (const auto& [id, t] : retired_) rows[id].totals = t;
    for (const client_recorder* r : live_) {
      if (r->open()) ++out.connections;
      r->table().for_each([&](const client_method_stats& s) {
        client_method_row& row = rows[s.id];
        const std::uint64_t ended = s.latency.count();
        const std::uint64_t calls = s.calls.get();
        row.in_flight += calls > ended ? calls - ended : 0;
        add(row.totals, s);
      });
    }
    for (const auto& [endpoint, p] : pools_) {
      auto get = [](const std::atomic<std::uint64_t>& v) {
        return v.load(std::memory_order_relaxed);
      };
      out.pools.push_back({endpoint, std::max<std::int64_t>(p->connections.load(), 0),
                           get(p->connects_ok), get(p->connects_failed), get(p->retries),
                           get(p->closed_idle), get(p->closed_aged), get(p->closed_broken)});
    }
    for (const auto& [endpoint, b] : balancers_) {
      out.balancers.push_back({endpoint, b->failures.load(), b->ejections.load()});
    }
  }
  for (auto& [id, row] : rows) out.methods.push_back(std::move(row));
  std::sort(out.methods.begin(), out.methods.end(),
            [](const auto& a, const auto& b) { return a.totals.name < b.totals.name; });
  return out;
}

}  // namespace corvid::metrics
