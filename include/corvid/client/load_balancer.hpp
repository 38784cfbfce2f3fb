#pragma once
// load_balancer: calls spread over several endpoints, each with its own client_pool.
// Endpoints whose connections fail are ejected for a growing back-off, then probed with one
// call of the health method (protocol/health.hpp) and restored when it answers serving. Each
// endpoint's health watch is followed (lb_config::follow_health): one not serving or draining
// gets no new calls, and an ejected one returns once its watch says serving.
// Endpoints can be added and removed while running, or followed by name (open()).
//
//   auto lb = corvid::load_balancer::create({{"10.0.0.1:9000"}, {"10.0.0.2:9000", 2}}, cfg);
//   auto r = co_await lb->call<echo>("hello");          // or call_for / call_with
//   auto named = co_await corvid::load_balancer::open("etcd://10.0.0.9:2379/services/echo");
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "corvid/client/client_pool.hpp"
#include "corvid/client/lb_config.hpp"
#include "corvid/protocol/health.hpp"

namespace corvid {

namespace metrics {
struct lb_counters;  // src/metrics: an endpoint's balancer counters (client_config::metrics)
}
namespace discovery {
class endpoint_source;  // src/discovery: what open() follows
}
namespace detail {
class hash_ring;        // src/client/hash_ring.hpp
class health_follower;  // src/client/health_follower.hpp: an endpoint's health watch
// What an endpoint's health watch last said, for pick().
struct endpoint_health {
  std::atomic<bool> not_serving{false};    // not_serving or draining (or a probe said so)
  std::atomic<bool> serving_again{false};  // said serving since the endpoint was last ejected
  std::atomic<bool> watched{false};        // the watch is open (it has said something)
};
}  // namespace detail

struct lb_endpoint_stats {
  std::string address;
  std::uint64_t calls = 0;  // calls routed to it
  std::uint64_t failures = 0;
  bool ejected = false;
  std::size_t in_flight = 0;
  bool not_serving = false;  // its health method said not_serving or draining
  bool watched = false;      // its health watch is open (lb_config::follow_health)
};

class load_balancer : public std::enable_shared_from_this<load_balancer> {
 public:
  static std::shared_ptr<load_balancer> create(std::vector<lb_endpoint> endpoints,
                                               lb_config config = {});
  // A balancer that follows a name: "etcd://host:port/prefix" (servers registered with
  // server_config::registry), "list://h1:9000,h2:9000", "file:///path" (one address per
  // line, re-read on change) or "dns://name:port" (re-resolved every dns_refresh_interval and
  // after an endpoint fails). The first lookup happens here, on the caller's thread (bounded
  // by a 2 s timeout), so a bad name or an unreachable registry is this call's error; after
  // that, an origin out of reach leaves the endpoints as they were last known.
  static task<expected<std::shared_ptr<load_balancer>, rpc_error>> open(std::string url,
                                                                        lb_config config = {});
  ~load_balancer();
  // The endpoints followed now.
  std::vector<lb_endpoint> endpoints() const;
  void add_endpoint(lb_endpoint endpoint);
  // Stops routing to it; its pool (and connections) go away once calls on it have ended.
  bool remove_endpoint(const std::string& address);

  // The pool's calls, on the endpoint the policy picks. A call that could not reach its
  // endpoint (connect_failed, or rpc_error::request_unsent()) is sent once more, elsewhere:
  // each attempt gets its own copy of the arguments.
  template <auto F, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> call(Args... args) {
    co_return co_await routed<expected<detail::client_result_t<F>, rpc_error>>(
        [&](client_pool& p) { return p.template call<F>(args...); });
  }
  template <auto F, class Rep, class Period, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> call_for(
      std::chrono::duration<Rep, Period> timeout, Args... args) {
    co_return co_await routed<expected<detail::client_result_t<F>, rpc_error>>(
        [&](client_pool& p) { return p.template call_for<F>(timeout, args...); });
  }
  template <auto F, class... Args>
  task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> call_with(
      call_options options, Args... args) {
    co_return co_await routed<expected<with_attachment<detail::client_result_t<F>>, rpc_error>>(
        [&](client_pool& p) { return p.template call_with<F>(options, args...); },
        options.hash_key);
  }

  // Streams, opened on the endpoint the policy picks (a failure to open counts against it).
  template <auto F, class... Args>
  task<expected<stream_reader_t<F>, rpc_error>> stream(Args... args) {
    co_return co_await routed<expected<stream_reader_t<F>, rpc_error>>(
        [&](client_pool& p) { return p.template stream<F>(args...); });
  }
  template <auto F, class... Args>
  task<expected<open_stream_t<F>, rpc_error>> open_stream(Args... args) {
    co_return co_await routed<expected<open_stream_t<F>, rpc_error>>(
        [&](client_pool& p) { return p.template open_stream<F>(args...); });
  }

  std::vector<lb_endpoint_stats> stats() const;

 private:
  struct node {
    lb_endpoint endpoint;
    std::shared_ptr<client_pool> pool;
    std::atomic<std::size_t> in_flight{0};
    std::atomic<std::uint64_t> calls{0}, failures{0};
    detail::endpoint_health health;
    metrics::lb_counters* metrics = nullptr;            // null: metrics off
    std::shared_ptr<detail::health_follower> follower;  // null: follow_health off
    // Under the balancer's mutex:
    std::chrono::steady_clock::time_point ejected_until{};
    unsigned ejections = 0;
    unsigned timeouts_in_a_row = 0;
    bool probing = false;  // a probe call is out; others still avoid the endpoint
    long long current_weight = 0;
    bool usable = false;  // pick()'s scratch: may take this call
  };
  struct picked {
    std::shared_ptr<node> n;
    bool probe = false;  // the one call that decides whether an ejected endpoint returns
  };
  explicit load_balancer(lb_config config);
  // `avoid`: an endpoint the call could not reach a moment ago.
  expected<picked, rpc_error> pick(std::string_view hash_key, const node* avoid);
  void report(node& n, bool probe, rpc_errc result);
  // The probe of an ejected endpoint: its health method, so no user call risks a dead one.
  task<bool> probe(std::shared_ptr<node> n);
  std::shared_ptr<node> make_node(lb_endpoint endpoint);
  void rebuild_ring_locked();
  // What open()'s source hands over: the whole set, applied as a difference.
  void set_endpoints(std::vector<lb_endpoint> endpoints);
  // The node's health watch (follow_health); stop it once the node has left nodes_.
  void follow(const std::shared_ptr<node>& n);
  static void unfollow(node& n);
  // Under mutex_: an ejected node whose watch has said serving since is ejected no more.
  static bool readmitted(node& n);

  template <class R, class Invoke>
  task<R> routed(Invoke invoke, std::string_view hash_key = {}) {
    std::shared_ptr<node> avoid;
    for (int attempt = 0, probes = 0;;) {
      auto p = pick(hash_key, avoid.get());
      if (!p) co_return unexpected(std::move(p).error());
      // A failed probe re-ejects the endpoint, so the next pick goes elsewhere.
      if (p->probe && !co_await probe(p->n)) {
        if (++probes > 8) {
          co_return unexpected(rpc_error(rpc_errc::connect_failed, "no endpoint answers"));
        }
        continue;
      }
      node& n = *p->n;  // p holds the node (and its pool) until the call ends
      if (p->probe) n.in_flight.fetch_add(1, std::memory_order_relaxed);  // pick() counts others
      R r = co_await invoke(*n.pool);
      n.in_flight.fetch_sub(1, std::memory_order_relaxed);
      report(n, false, r.has_value() ? rpc_errc::ok : r.error().code());
      // A call that never reached its server (it stopped, died, or refused the connection)
      // is safe to send once more, to another endpoint.
      if (!r && attempt == 0 &&
          (r.error().code() == rpc_errc::connect_failed || r.error().request_unsent())) {
        avoid = std::move(p->n);
        ++attempt;
        continue;
      }
      co_return r;
    }
  }

  const lb_config config_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<node>> nodes_;
  std::unique_ptr<detail::hash_ring> ring_;  // nodes_' ids, in nodes_' order
  std::size_t next_ = 0;
  std::minstd_rand rng_{std::random_device{}()};
  std::unique_ptr<discovery::endpoint_source> source_;  // open(); stopped first
};

}  // namespace corvid
