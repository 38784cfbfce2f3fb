#pragma once
// What pools and load balancers count per endpoint (client_config::metrics). Written by
// whichever thread connects, reaps or ejects, at most a few times per connection or ejection
// (never per call), so plain atomic adds; all pools (balancers) of one metrics object to the
// same endpoint share one entry. An entry counts its users (client_registry hands it out and
// takes it back), so the series of an endpoint nobody follows any more can leave /metrics.
#include <atomic>
#include <cstdint>

namespace corvid::metrics {

struct series_use {
  std::atomic<std::int32_t> users{0};
  std::atomic<std::int64_t> unused_since{0};  // steady ticks; when `users` last dropped to 0
};

struct pool_counters : series_use {
  std::atomic<std::int64_t> connections{0};  // open now: connected, not yet closed by the pool
  std::atomic<std::uint64_t> connects_ok{0}, connects_failed{0};
  std::atomic<std::uint64_t> retries{0};  // calls retried because their request was never sent
  std::atomic<std::uint64_t> closed_idle{0}, closed_aged{0}, closed_broken{0};
  static void add(std::atomic<std::uint64_t>& c) noexcept {
    c.fetch_add(1, std::memory_order_relaxed);
  }
};

struct lb_counters : series_use {
  std::atomic<std::uint64_t> failures{0};   // calls that failed to reach the endpoint
  std::atomic<std::uint64_t> ejections{0};  // times it was ejected
};

}  // namespace corvid::metrics
