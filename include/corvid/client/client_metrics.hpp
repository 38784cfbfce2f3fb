#pragma once
// Call metrics of clients, pools and load balancers, in the Prometheus text format.
//
//   auto m = std::make_shared<corvid::client_metrics>();
//   corvid::client_config cfg;
//   cfg.metrics = m;                          // every client, pool or balancer made with it
//   corvid::rpc_client client(cfg);           // reports into `m`
//   server_cfg.client_metrics = m;            // and a server's /metrics shows them too
//   std::string text = m->prometheus_text();
//
// Per method (label `method`, the function's qualified name as the server names it): calls,
// errors by rpc_errc, latency from submission to result, calls in flight, request and reply
// bytes; per client: connects and open connections; per pool and balancer endpoint: its
// connections, connects, retries and ejections (README, "Operating corvid").
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "corvid/export.hpp"

namespace corvid {

namespace metrics {
class client_registry;  // src/metrics: the counters behind this handle
}
namespace detail {
struct client_metrics_access;
struct discovery_metrics_access;  // src/discovery: its sources count the entries they reject
}  // namespace detail

class CORVID_API client_metrics {
 public:
  // Per-endpoint series (pool_*, lb_*) of an endpoint no pool or balancer uses any more leave
  // the exposition after `endpoint_linger`; past `max_endpoint_series` endpoints (of pools,
  // and of balancers), further ones are counted together under endpoint="other".
  explicit client_metrics(std::chrono::milliseconds endpoint_linger = std::chrono::minutes(5),
                          std::size_t max_endpoint_series = 4096);
  ~client_metrics();
  client_metrics(const client_metrics&) = delete;
  client_metrics& operator=(const client_metrics&) = delete;

  // Every family, with # HELP and # TYPE; safe from any thread while calls run.
  std::string prometheus_text() const;

 private:
  friend struct detail::client_metrics_access;
  friend struct detail::discovery_metrics_access;
  std::unique_ptr<metrics::client_registry> registry_;
};

}  // namespace corvid
