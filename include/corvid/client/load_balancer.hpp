#pragma once
// load_balancer: calls spread over several endpoints, each with its own client_pool.
// Endpoints whose connections fail are ejected for a growing back-off, then probed with one
// call and restored when it succeeds. Endpoints can be added and removed while running.
//
//   auto lb = corvid::load_balancer::create({{"10.0.0.1:9000"}, {"10.0.0.2:9000", 2}}, cfg);
//   auto r = co_await lb->call<echo>("hello");          // or call_for / call_with
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "corvid/client/client_pool.hpp"

namespace corvid {

namespace metrics {
struct lb_counters;  // src/metrics: an endpoint's balancer counters (client_config::metrics)
}

enum class lb_policy { round_robin, weighted_round_robin, random, power_of_two_choices };

struct lb_endpoint {
  std::string address;  // "host:port" or "unix:/path"
  unsigned weight = 1;  // weighted_round_robin only
};

struct lb_config {
  lb_policy policy = lb_policy::round_robin;
  pool_config pool;  // settings of each endpoint's pool
  // An endpoint whose call fails to reach it (connect_failed, connection_closed) is ejected for
  // eject_base * 2^(ejections-1), at most eject_max; then one probe call decides. The calls
  // that were in flight when it failed count as one failure, not one each.
  std::chrono::milliseconds eject_base{1000};
  std::chrono::milliseconds eject_max{30000};
  // This many timeouts in a row with no success between them eject the endpoint too: a host
  // that went silent (no FIN, no RST) answers nothing, but its connection stays up until a
  // heartbeat gives up on it. 0 = timeouts never eject.
  unsigned eject_after_timeouts = 5;
};

struct lb_endpoint_stats {
  std::string address;
  std::uint64_t calls = 0;  // calls routed to it
  std::uint64_t failures = 0;
  bool ejected = false;
  std::size_t in_flight = 0;
};

class load_balancer : public std::enable_shared_from_this<load_balancer> {
 public:
  static std::shared_ptr<load_balancer> create(std::vector<lb_endpoint> endpoints,
                                               lb_config config = {});
  void add_endpoint(lb_endpoint endpoint);
  // Stops routing to it; its pool (and connections) go away once calls on it have ended.
  bool remove_endpoint(const std::string& address);

  // The pool's calls, on the endpoint the policy picks.
  template <auto F, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> call(Args... args) {
    co_return co_await routed<expected<detail::client_result_t<F>, rpc_error>>(
        [&](client_pool& p) { return p.template call<F>(std::move(args)...); });
  }
  template <auto F, class Rep, class Period, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> call_for(
      std::chrono::duration<Rep, Period> timeout, Args... args) {
    co_return co_await routed<expected<detail::client_result_t<F>, rpc_error>>(
        [&](client_pool& p) { return p.template call_for<F>(timeout, std::move(args)...); });
  }
  template <auto F, class... Args>
  task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> call_with(
      call_options options, Args... args) {
    co_return co_await routed<expected<with_attachment<detail::client_result_t<F>>, rpc_error>>(
        [&](client_pool& p) { return p.template call_with<F>(options, std::move(args)...); });
  }

  // Streams, opened on the endpoint the policy picks (a failure to open counts against it).
  template <auto F, class... Args>
  task<expected<stream_reader_t<F>, rpc_error>> stream(Args... args) {
    co_return co_await routed<expected<stream_reader_t<F>, rpc_error>>(
        [&](client_pool& p) { return p.template stream<F>(std::move(args)...); });
  }
  template <auto F, class... Args>
  task<expected<open_stream_t<F>, rpc_error>> open_stream(Args... args) {
    co_return co_await routed<expected<open_stream_t<F>, rpc_error>>(
        [&](client_pool& p) { return p.template open_stream<F>(std::move(args)...); });
  }

  std::vector<lb_endpoint_stats> stats() const;

 private:
  struct node {
    lb_endpoint endpoint;
    std::shared_ptr<client_pool> pool;
    std::atomic<std::size_t> in_flight{0};
    std::atomic<std::uint64_t> calls{0}, failures{0};
    metrics::lb_counters* metrics = nullptr;  // null: metrics off
    // Under the balancer's mutex:
    std::chrono::steady_clock::time_point ejected_until{};
    unsigned ejections = 0;
    unsigned timeouts_in_a_row = 0;
    bool probing = false;  // a probe call is out; others still avoid the endpoint
    long long current_weight = 0;
  };
  struct picked {
    std::shared_ptr<node> n;
    bool probe = false;  // the one call that decides whether an ejected endpoint returns
  };
  explicit load_balancer(lb_config config) : config_(std::move(config)) {}
  expected<picked, rpc_error> pick();
  void report(node& n, bool probe, rpc_errc result);

  template <class R, class Invoke>
  task<R> routed(Invoke invoke) {
    auto p = pick();
    if (!p) co_return unexpected(std::move(p).error());
    node& n = *p->n;  // p holds the node (and its pool) until the call ends
    n.in_flight.fetch_add(1, std::memory_order_relaxed);
    R r = co_await invoke(*n.pool);
    n.in_flight.fetch_sub(1, std::memory_order_relaxed);
    report(n, p->probe, r.has_value() ? rpc_errc::ok : r.error().code());
    co_return r;
  }

  const lb_config config_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<node>> nodes_;
  std::size_t next_ = 0;
  std::minstd_rand rng_{std::random_device{}()};
};

}  // namespace corvid
