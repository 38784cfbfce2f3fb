#pragma once
// A server's metrics at one moment, summed over the reactors' shards: what the exposition,
// the status page and /connections render.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "corvid/memory/memory_usage.hpp"
#include "corvid/runtime/transport_stats.hpp"

#include "connection_stats.hpp"
#include "server_metrics.hpp"

namespace corvid::metrics {

struct method_totals {
  std::string name;
  std::uint64_t calls = 0, request_bytes = 0, reply_bytes = 0;
  std::array<std::uint64_t, errc_count> errors{};
  std::vector<std::uint64_t> buckets;  // latency_histogram buckets, summed
  std::uint64_t latency_count = 0, latency_sum_ns = 0;
  std::uint64_t errors_total() const noexcept;
  std::uint64_t in_flight() const noexcept {
    return calls > latency_count ? calls - latency_count : 0;
  }
  // Nearest-rank percentile of the latency, in nanoseconds (bucket midpoint), 0 if none.
  std::uint64_t latency_percentile(double p) const noexcept;
};

struct connection_row {
  std::string peer;
  transport_kind transport = transport_kind::tcp;
  std::uint64_t bytes_received = 0, bytes_sent = 0, calls = 0, calls_in_flight = 0;
  double age_seconds = 0;
};

// The RDMA chunk pool (rpc_server::init_ibv): registered memory receive and send rings use.
struct rdma_pool_row {
  std::uint64_t chunks_in_use = 0, chunks_cached = 0, registered_bytes = 0, watermark = 0;
  std::uint64_t refusals = 0;
};

// The worker pool (register_blocking_handler): its queue and threads.
struct worker_row {
  std::uint64_t queued = 0, queued_bytes = 0, busy = 0, threads = 0;
  std::uint64_t max_queued = 0, max_queued_bytes = 0;
};

// server_config::registry: the server's registration (src/discovery/registration.hpp).
struct registry_row {
  std::string url, key, state, last_error;
  bool registered = false;
  std::uint64_t failures = 0, registrations = 0;
};

struct server_snapshot {
  std::vector<method_totals> methods;  // registered methods, then requests naming none
  std::vector<connection_row> connections;
  memory_usage memory;
  transport_stats transport{};
  double uptime_seconds = 0;
  bool serving = true;     // false once stop() began
  std::uint16_t port = 0;  // the bound port (TCP)
  bool has_rdma = false;   // init_ibv: `rdma_pool` is filled in
  rdma_pool_row rdma_pool;
  bool has_workers = false;  // a blocking handler is registered: `workers` is filled in
  worker_row workers;
  bool has_registry = false;  // a registry is configured: `registry` is filled in
  registry_row registry;
};

// Sums the shards' method stats (methods never called have all-zero totals).
std::vector<method_totals> collect_methods(const server_metrics& m);

}  // namespace corvid::metrics
