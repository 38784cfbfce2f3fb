#pragma once
// The counters behind a corvid::client_metrics: the live connections' method stats (each
// connection writes its own, client_recorder.hpp), the totals of connections that died, and
// the per-endpoint counters of pools and balancers. Its mutex is taken per connection, per
// method first seen on a connection, and per scrape; never per call.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client_method_table.hpp"
#include "client_snapshot.hpp"
#include "discovery_rejections.hpp"
#include "endpoint_counters.hpp"

namespace corvid::metrics {

class client_recorder;

class client_registry {
 public:
  void attach(const client_recorder* r);
  // The connection is going away: its stats join the totals.
  void retire(const client_recorder* r);
  // A method's first call on a connection (its lock held): creates its stats there.
  client_method_stats* create(client_method_table& table, std::uint32_t id, std::string_view name);
  void connected(bool ok) noexcept {
    (ok ? connects_ok_ : connects_failed_).fetch_add(1, std::memory_order_relaxed);
  }
  // The shared entry of `endpoint`'s pools (balancers), counted as used until release().
  // An entry unused for `endpoint_linger` leaves /metrics (and memory). Past
  // `max_endpoint_series` entries of a kind, a new endpoint shares the entry "other", so
  // registry churn cannot grow the exposition without bound.
  pool_counters& pool(const std::string& endpoint);
  lb_counters& balancer(const std::string& endpoint);
  void release(series_use& entry) noexcept;
  // Entries the endpoint sources (and balancers) of this metrics object turned away.
  void discovery_rejected(discovery_reject reason, std::uint64_t n = 1) noexcept {
    discovery_rejected_.add(reason, n);
  }

  // A balancer sent or held back a retry or a hedge (call_policy_event).
  void call_policy(call_policy_event e) noexcept {
    call_policies_[static_cast<std::size_t>(e)].fetch_add(1, std::memory_order_relaxed);
  }
  // A balancer held an update that listed no endpoint (lb_config::empty_update_grace).
  void empty_update_held() noexcept { empty_updates_held_.fetch_add(1, std::memory_order_relaxed); }

  client_snapshot snapshot() const;

  client_registry(std::chrono::milliseconds endpoint_linger, std::size_t max_endpoint_series)
      : endpoint_linger_(endpoint_linger), max_endpoint_series_(max_endpoint_series) {}

 private:
  template <class Counters>
  Counters& use(std::map<std::string, std::unique_ptr<Counters>>& entries,
                const std::string& endpoint);
  // Under mutex_: drops the entries unused for endpoint_linger.
  void prune_locked() const;

  const std::chrono::milliseconds endpoint_linger_;
  const std::size_t max_endpoint_series_;
  mutable std::mutex mutex_;
  std::vector<const client_recorder*> live_;
  std::map<std::uint32_t, method_totals> retired_;  // by function id
  std::atomic<std::uint64_t> connects_ok_{0}, connects_failed_{0};
  mutable std::map<std::string, std::unique_ptr<pool_counters>> pools_;
  mutable std::map<std::string, std::unique_ptr<lb_counters>> balancers_;
  discovery_rejections discovery_rejected_;
  std::atomic<std::uint64_t> empty_updates_held_{0};
  std::array<std::atomic<std::uint64_t>, call_policy_event_count> call_policies_{};
};

}  // namespace corvid::metrics
