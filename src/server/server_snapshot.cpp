// server_core as the admin side's host (admin::admin_host): its view of a server, gathered
// off the hot path (under the connection registry's lock, never taken per request).
#include <chrono>

#include "../discovery/server_presence.hpp"
#include "../rdma/rdma_context.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {

metrics::server_snapshot server_core::metrics_snapshot() const {
  metrics::server_snapshot s;
  if (metrics) {
    s.methods = metrics::collect_methods(*metrics);
    s.uptime_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - metrics->started())
            .count();
  }
  s.memory = memory.server.snapshot();
  s.port = bound_port;
  if (rdma) {
    const rdma::chunk_pool_stats p = rdma->pool().stats();
    s.has_rdma = true;
    s.rdma_pool = {p.in_use, p.cached, p.registered_bytes, rdma->pool().watermark(), p.refusals};
  }
  if (const worker_pool* w = workers()) {
    s.has_workers = true;
    s.workers = {w->queued(),  w->queued_bytes(), w->busy(),
                 w->threads(), w->max_queued(),   w->max_queued_bytes()};
  }
  if (presence) {
    if (auto r = presence->registry()) {
      s.has_registry = true;
      s.registry = {r->registry,
                    r->key,
                    discovery::to_string(r->state),
                    r->last_error,
                    r->state == discovery::registry_state::registered,
                    r->failures,
                    r->registered};
    }
  }
  s.transport = stats.snapshot();
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lk(mutex_);
  s.serving = started_ && !stopping_;
  s.connections.reserve(connections_.size());
  for (const auto& [ptr, conn] : connections_) {
    const metrics::connection_stats& c = conn->metrics_connection();
    metrics::connection_row row;
    row.peer = conn->peer_address();
    row.transport = c.transport.load(std::memory_order_relaxed);
    row.bytes_received = c.bytes_received.get();
    row.bytes_sent = c.bytes_sent.get();
    row.calls = c.calls.get();
    row.calls_in_flight = c.calls_in_flight.load(std::memory_order_relaxed);
    row.age_seconds = std::chrono::duration<double>(now - c.opened).count();
    s.connections.push_back(std::move(row));
  }
  return s;
}

}  // namespace corvid::detail
