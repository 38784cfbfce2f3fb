#pragma once
// The counters behind a corvid::client_metrics: the live connections' method stats (each
// connection writes its own, client_recorder.hpp), the totals of connections that died, and
// the per-endpoint counters of pools and balancers. Its mutex is taken per connection, per
// method first seen on a connection, and per scrape; never per call.
#include <atomic>
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
  // The shared entry of `endpoint`'s pools (balancers); it lives as long as the registry.
  pool_counters& pool(const std::string& endpoint);
  lb_counters& balancer(const std::string& endpoint);
  // Entries the endpoint sources (and balancers) of this metrics object turned away.
  void discovery_rejected(discovery_reject reason, std::uint64_t n = 1) noexcept {
    discovery_rejected_.add(reason, n);
  }

  client_snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<const client_recorder*> live_;
  std::map<std::uint32_t, method_totals> retired_;  // by function id
  std::atomic<std::uint64_t> connects_ok_{0}, connects_failed_{0};
  std::map<std::string, std::unique_ptr<pool_counters>> pools_;
  std::map<std::string, std::unique_ptr<lb_counters>> balancers_;
  discovery_rejections discovery_rejected_;
};

}  // namespace corvid::metrics
