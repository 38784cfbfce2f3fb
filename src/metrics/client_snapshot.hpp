#pragma once
// The client metrics at one moment, summed over live and retired connections: what
// client_metrics::prometheus_text() renders.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "discovery_rejections.hpp"
#include "snapshot.hpp"

namespace corvid::metrics {

struct client_method_row {
  method_totals totals;         // calls, errors, bytes and latency, as the server sums them
  std::uint64_t in_flight = 0;  // submitted on live connections and not ended yet
};

struct pool_row {
  std::string endpoint;
  std::int64_t connections = 0;
  std::uint64_t connects_ok = 0, connects_failed = 0, retries = 0;
  std::uint64_t closed_idle = 0, closed_aged = 0, closed_broken = 0;
};

struct lb_row {
  std::string endpoint;
  std::uint64_t failures = 0, ejections = 0;
};

// What a balancer's call policies did, in load_balancer::policy_count's order.
enum class call_policy_event { retry, retry_throttled, hedge, hedge_won, hedge_throttled };
inline constexpr std::size_t call_policy_event_count = 5;

struct client_snapshot {
  std::vector<client_method_row> methods;  // by method name
  std::uint64_t connects_ok = 0, connects_failed = 0;
  std::uint64_t connections = 0;                                           // open now
  std::vector<pool_row> pools;                                             // by endpoint
  std::vector<lb_row> balancers;                                           // by endpoint
  std::array<std::uint64_t, discovery_reject_count> discovery_rejected{};  // by reason
  std::uint64_t empty_updates_held = 0;
  std::array<std::uint64_t, call_policy_event_count> call_policies{};
};

std::string prometheus_text(const client_snapshot& s);

}  // namespace corvid::metrics
