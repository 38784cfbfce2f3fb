// The client metrics' exposition: the server's families (prometheus_text.cpp) with the
// corvid_client_ prefix, plus per-endpoint ones of pools and balancers when there are any.
#include "client_snapshot.hpp"
#include "prometheus_writer.hpp"

namespace corvid::metrics {

std::string prometheus_text(const client_snapshot& s) {
  std::string out;
  out.reserve(2048 + s.methods.size() * 4096);
  prometheus_writer w(out);
  auto d = [](std::uint64_t v) {
    return static_cast<double>(v);
  };

  w.family("corvid_client_calls_total", "counter", "Calls submitted, by method.");
  for (const auto& r : s.methods) {
    w.sample("corvid_client_calls_total", {{"method", r.totals.name}}, d(r.totals.calls));
  }
  w.family("corvid_client_call_errors_total", "counter",
           "Calls ended with an error, by method and rpc_errc name.");
  for (const auto& r : s.methods) w.error_counts("corvid_client_call_errors_total", r.totals);
  w.family("corvid_client_call_duration_seconds", "histogram",
           "From a call's submission to its result (reply, error or deadline), by method.");
  for (const auto& r : s.methods) {
    w.duration_histogram("corvid_client_call_duration_seconds", r.totals);
  }
  w.family("corvid_client_calls_in_flight", "gauge",
           "Calls submitted and not ended yet (waiting for room, queued or sent), by method.");
  for (const auto& r : s.methods) {
    w.sample("corvid_client_calls_in_flight", {{"method", r.totals.name}}, d(r.in_flight));
  }
  w.family("corvid_client_request_bytes_total", "counter",
           "Request payload bytes queued (arguments and attachment), by method.");
  for (const auto& r : s.methods) {
    w.sample("corvid_client_request_bytes_total", {{"method", r.totals.name}},
             d(r.totals.request_bytes));
  }
  w.family("corvid_client_reply_bytes_total", "counter",
           "Success reply frame bytes received (header, result and attachment), by method.");
  for (const auto& r : s.methods) {
    w.sample("corvid_client_reply_bytes_total", {{"method", r.totals.name}},
             d(r.totals.reply_bytes));
  }
  w.family("corvid_client_connects_total", "counter",
           "Connect attempts of clients (pooled ones included), by result.");
  w.sample("corvid_client_connects_total", {{"result", "ok"}}, d(s.connects_ok));
  w.sample("corvid_client_connects_total", {{"result", "failed"}}, d(s.connects_failed));
  w.single("corvid_client_connections", "gauge", "Open client connections.", d(s.connections));
  // Every reason, zeros included: an alert on a rate needs the series before the first one.
  w.family("corvid_discovery_rejected_total", "counter",
           "Discovery entries turned away (registry values, file lines, DNS answers, keys past "
           "a bound), by reason.");
  for (std::size_t r = 0; r < discovery_reject_count; ++r) {
    w.sample("corvid_discovery_rejected_total",
             {{"reason", to_string(static_cast<discovery_reject>(r))}}, d(s.discovery_rejected[r]));
  }
  w.single("corvid_lb_empty_updates_held_total", "counter",
           "Discovery updates listing no endpoint that a balancer held for its grace, keeping "
           "the endpoints it had.",
           d(s.empty_updates_held));
  // Both families always: an alert on a rate needs the series before the first event.
  auto policy = [&](call_policy_event e) {
    return d(s.call_policies[static_cast<std::size_t>(e)]);
  };
  w.family("corvid_lb_retries_total", "counter",
           "Calls a balancer sent again (retry_policy), and retries its budget held back.");
  w.sample("corvid_lb_retries_total", {{"result", "sent"}}, policy(call_policy_event::retry));
  w.sample("corvid_lb_retries_total", {{"result", "throttled"}},
           policy(call_policy_event::retry_throttled));
  w.family("corvid_lb_hedges_total", "counter",
           "Hedged copies a balancer sent beyond a call's first, calls a hedge answered, and "
           "hedges its retry budget held back.");
  w.sample("corvid_lb_hedges_total", {{"result", "sent"}}, policy(call_policy_event::hedge));
  w.sample("corvid_lb_hedges_total", {{"result", "won"}}, policy(call_policy_event::hedge_won));
  w.sample("corvid_lb_hedges_total", {{"result", "throttled"}},
           policy(call_policy_event::hedge_throttled));

  if (!s.pools.empty()) {
    w.family("corvid_pool_connections", "gauge", "Open connections of client pools, by endpoint.");
    for (const auto& p : s.pools) {
      w.sample("corvid_pool_connections", {{"endpoint", p.endpoint}},
               static_cast<double>(p.connections));
    }
    w.family("corvid_pool_connects_total", "counter",
             "Connects started by client pools, by endpoint and result.");
    for (const auto& p : s.pools) {
      w.sample("corvid_pool_connects_total", {{"endpoint", p.endpoint}, {"result", "ok"}},
               d(p.connects_ok));
      w.sample("corvid_pool_connects_total", {{"endpoint", p.endpoint}, {"result", "failed"}},
               d(p.connects_failed));
    }
    w.family("corvid_pool_retries_total", "counter",
             "Calls a pool retried on another connection (their request was never sent).");
    for (const auto& p : s.pools) {
      w.sample("corvid_pool_retries_total", {{"endpoint", p.endpoint}}, d(p.retries));
    }
    w.family("corvid_pool_closed_total", "counter",
             "Connections a pool closed, by endpoint and reason (idle, aged, broken).");
    for (const auto& p : s.pools) {
      w.sample("corvid_pool_closed_total", {{"endpoint", p.endpoint}, {"reason", "idle"}},
               d(p.closed_idle));
      w.sample("corvid_pool_closed_total", {{"endpoint", p.endpoint}, {"reason", "aged"}},
               d(p.closed_aged));
      w.sample("corvid_pool_closed_total", {{"endpoint", p.endpoint}, {"reason", "broken"}},
               d(p.closed_broken));
    }
  }
  if (!s.balancers.empty()) {
    w.family("corvid_lb_failures_total", "counter",
             "Calls a load balancer saw fail to reach an endpoint (connect_failed, "
             "connection_closed, timeout), by endpoint.");
    for (const auto& b : s.balancers) {
      w.sample("corvid_lb_failures_total", {{"endpoint", b.endpoint}}, d(b.failures));
    }
    w.family("corvid_lb_ejections_total", "counter",
             "Times a load balancer ejected an endpoint, by endpoint.");
    for (const auto& b : s.balancers) {
      w.sample("corvid_lb_ejections_total", {{"endpoint", b.endpoint}}, d(b.ejections));
    }
  }
  return out;
}

}  // namespace corvid::metrics
