#include "prometheus_text.hpp"

#include "prometheus_writer.hpp"

namespace corvid::metrics {
namespace {

void memory_tree(prometheus_writer& w, const memory_usage& node, const std::string& path,
                 bool gauge_limit) {
  const std::string here = path.empty() ? node.name : path + "/" + node.name;
  if (gauge_limit) {
    if (node.limit != unlimited_memory) {
      w.sample("corvid_server_memory_limit_bytes", {{"tracker", here}},
               static_cast<double>(node.limit));
    }
  } else {
    w.sample("corvid_server_memory_bytes", {{"tracker", here}}, static_cast<double>(node.current));
  }
  for (const memory_usage& c : node.children) memory_tree(w, c, here, gauge_limit);
}

}  // namespace

std::string prometheus_text(const server_snapshot& s) {
  std::string out;
  out.reserve(4096 + s.methods.size() * 4096);
  prometheus_writer w(out);
  auto d = [](std::uint64_t v) {
    return static_cast<double>(v);
  };

  w.family("corvid_server_calls_total", "counter", "Requests dispatched to a handler, by method.");
  for (const auto& m : s.methods)
    w.sample("corvid_server_calls_total", {{"method", m.name}}, d(m.calls));

  w.family("corvid_server_errors_total", "counter",
           "Calls answered with an error, by method and rpc_errc name.");
  for (const auto& m : s.methods) w.error_counts("corvid_server_errors_total", m);

  w.family("corvid_server_call_duration_seconds", "histogram",
           "From a request's arrival to its reply queued, by method.");
  for (const auto& m : s.methods) {
    if (m.calls != 0 || m.latency_count != 0)
      w.duration_histogram("corvid_server_call_duration_seconds", m);
  }

  w.family("corvid_server_requests_in_flight", "gauge",
           "Requests dispatched and not yet answered, by method.");
  for (const auto& m : s.methods) {
    w.sample("corvid_server_requests_in_flight", {{"method", m.name}}, d(m.in_flight()));
  }
  w.family("corvid_server_request_bytes_total", "counter",
           "Request payload bytes (arguments and attachment), by method.");
  for (const auto& m : s.methods) {
    w.sample("corvid_server_request_bytes_total", {{"method", m.name}}, d(m.request_bytes));
  }
  w.family("corvid_server_reply_bytes_total", "counter",
           "Success reply frame bytes (header, result and attachment), by method.");
  for (const auto& m : s.methods) {
    w.sample("corvid_server_reply_bytes_total", {{"method", m.name}}, d(m.reply_bytes));
  }

  w.family("corvid_server_connections", "gauge", "Open connections, by transport.");
  std::uint64_t by_transport[transport_count] = {};
  for (const auto& c : s.connections) ++by_transport[static_cast<std::size_t>(c.transport)];
  for (std::size_t t = 0; t < transport_count; ++t) {
    w.sample("corvid_server_connections",
             {{"transport", to_string(static_cast<transport_kind>(t))}}, d(by_transport[t]));
  }

  if (s.has_registry) {
    w.family("corvid_server_registry_registered", "gauge",
             "1 while the server's key is registered (server_config::registry), else 0.");
    w.sample("corvid_server_registry_registered", {{"registry", s.registry.url}},
             s.registry.registered ? 1.0 : 0.0);
    w.family("corvid_server_registry_failures_total", "counter",
             "Requests to the registry that failed (it was out of reach or refused).");
    w.sample("corvid_server_registry_failures_total", {{"registry", s.registry.url}},
             d(s.registry.failures));
  }

  w.family("corvid_server_memory_bytes", "gauge",
           "Bytes charged to each memory tracker (rpc_server::memory()), by tracker path.");
  memory_tree(w, s.memory, "", false);
  w.family("corvid_server_memory_limit_bytes", "gauge", "Limit of each bounded memory tracker.");
  memory_tree(w, s.memory, "", true);

  struct plain {
    const char* name;
    const char* help;
    std::uint64_t value;
  };
  const transport_stats& t = s.transport;
  const plain counters[] = {
      {"corvid_server_bytes_received_total", "Bytes read from all connections.", t.bytes_received},
      {"corvid_server_bytes_sent_total", "Bytes written to all connections.", t.bytes_sent},
      {"corvid_server_frames_received_total", "Frames received.", t.frames_received},
      {"corvid_server_frames_sent_total", "Frames sent.", t.frames_sent},
      {"corvid_server_read_syscalls_total", "Socket reads.", t.read_syscalls},
      {"corvid_server_write_syscalls_total", "Socket writes.", t.write_syscalls},
      {"corvid_server_calls_cancelled_total", "Calls cancelled by their client.",
       t.calls_cancelled},
      {"corvid_server_dead_peer_closes_total", "Connections closed as dead peers.",
       t.dead_peer_closes},
      {"corvid_server_rdma_sends_total", "RDMA SEND work requests posted.", t.rdma_sends},
      {"corvid_server_rdma_receives_total", "RDMA receive completions.", t.rdma_receives},
      {"corvid_server_rdma_errors_total", "Failed RDMA work requests.", t.rdma_errors},
      {"corvid_server_rdma_rnr_errors_total", "RDMA receiver-not-ready retries exhausted.",
       t.rdma_rnr_errors},
  };
  for (const plain& p : counters) w.single(p.name, "counter", p.help, d(p.value));
  if (s.has_rdma) {
    const rdma_pool_row& p = s.rdma_pool;
    w.family("corvid_server_rdma_chunks", "gauge",
             "Registered RDMA chunks, held by connections (in_use) or kept free (cached).");
    w.sample("corvid_server_rdma_chunks", {{"state", "in_use"}}, d(p.chunks_in_use));
    w.sample("corvid_server_rdma_chunks", {{"state", "cached"}}, d(p.chunks_cached));
    w.single("corvid_server_rdma_registered_bytes", "gauge",
             "Memory registered with the RDMA device by the chunk pool.", d(p.registered_bytes));
    w.single("corvid_server_rdma_registered_limit_bytes", "gauge",
             "The chunk pool's watermark (ibv_config).", d(p.watermark));
    w.single("corvid_server_rdma_chunk_refusals_total", "counter",
             "Chunk requests refused at the watermark.", d(p.refusals));
  }
  if (s.has_workers) {
    const worker_row& wr = s.workers;
    w.single("corvid_server_worker_queue_depth", "gauge",
             "Blocking calls queued for the worker pool, not yet running.", d(wr.queued));
    w.single("corvid_server_worker_queue_limit", "gauge",
             "The worker queue's length limit (server_config::worker_queue_length).",
             d(wr.max_queued));
    w.single("corvid_server_worker_queue_bytes", "gauge",
             "Request bytes of the blocking calls queued for the worker pool.", d(wr.queued_bytes));
    w.single("corvid_server_worker_queue_limit_bytes", "gauge",
             "The worker queue's byte limit (server_config::worker_queue_bytes).",
             d(wr.max_queued_bytes));
    w.family("corvid_server_workers", "gauge", "Worker threads, running a call (busy) or idle.");
    w.sample("corvid_server_workers", {{"state", "busy"}}, d(wr.busy));
    w.sample("corvid_server_workers", {{"state", "idle"}},
             d(wr.threads > wr.busy ? wr.threads - wr.busy : 0));
  }
  w.single("corvid_server_uptime_seconds", "gauge", "Seconds since the server started.",
           s.uptime_seconds);
  w.single("corvid_server_serving", "gauge", "1 while serving, 0 once stop() began.",
           s.serving ? 1 : 0);
  return out;
}

}  // namespace corvid::metrics
