#pragma once
// load_balancer: calls spread over several endpoints, each with its own client_pool.
// Endpoints whose connections fail are ejected for a growing back-off, then probed with one
// call of the health method (protocol/health.hpp) and restored when it answers serving. Each
// endpoint's health watch is followed (lb_config::follow_health): one not serving or draining
// gets no new calls, and an ejected one returns once its watch says serving.
// Endpoints can be added and removed while running, or followed by name (open()). Calls read a
// published snapshot of the endpoints: membership changes and ring rebuilds build a new one
// off the call path and swap it in, so a registry update never blocks a call.
//
//   auto lb = corvid::load_balancer::create({{"10.0.0.1:9000"}, {"10.0.0.2:9000", 2}}, cfg);
//   auto r = co_await lb->call<echo>("hello");          // or call_for / call_with
//   auto named = co_await corvid::load_balancer::open("etcd://10.0.0.9:2379/services/echo");
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "corvid/client/client_pool.hpp"
#include "corvid/client/hedge_race.hpp"
#include "corvid/client/lb_config.hpp"
#include "corvid/export.hpp"
#include "corvid/protocol/health.hpp"

namespace corvid {

namespace metrics {
struct lb_counters;  // src/metrics: an endpoint's balancer counters (client_config::metrics)
class client_registry;
}  // namespace metrics
namespace discovery {
class endpoint_source;  // src/discovery: what open() follows
}
namespace detail {
class hash_ring;        // src/client/hash_ring.hpp
class health_follower;  // src/client/health_follower.hpp: an endpoint's health watch
class latency_windows;  // src/client/latency_windows.hpp: recent latencies, by method
// What an endpoint's health watch last said, for pick().
struct endpoint_health {
  std::atomic<bool> not_serving{false};    // not_serving or draining (or a probe said so)
  std::atomic<bool> serving_again{false};  // said serving since the endpoint was last ejected
  std::atomic<bool> watched{false};        // the watch is open (it has said something)
};
}  // namespace detail

// The balancer as a whole.
struct lb_stats {
  std::size_t endpoints = 0;
  // Discovery entries not followed because max_endpoints were followed already.
  std::uint64_t rejected_over_limit = 0;
  // Updates that removed every endpoint and were held for empty_update_grace.
  std::uint64_t empty_updates_held = 0;
  bool holding_empty_update = false;  // one is held now
  // lb_config::retry: attempts sent again, and retries the budget held back.
  std::uint64_t retries = 0;
  std::uint64_t retries_throttled = 0;
  // lb_config::methods' hedging: copies sent beyond the first, calls a later copy answered,
  // and copies the retry budget held back.
  std::uint64_t hedges = 0;
  std::uint64_t hedges_won = 0;
  std::uint64_t hedges_throttled = 0;
};

struct lb_endpoint_stats {
  std::string address;
  std::uint64_t calls = 0;  // calls routed to it
  std::uint64_t failures = 0;
  bool ejected = false;
  std::size_t in_flight = 0;
  bool not_serving = false;  // its health method said not_serving or draining
  bool watched = false;      // its health watch is open (lb_config::follow_health)
  bool proven = false;       // has answered once (or was named by the user)
};

class CORVID_API load_balancer : public std::enable_shared_from_this<load_balancer> {
 public:
  static std::shared_ptr<load_balancer> create(std::vector<lb_endpoint> endpoints,
                                               lb_config config = {});
  // A balancer that follows a name: "etcd://host:port/prefix" (servers registered with
  // server_config::registry), "list://h1:9000,h2:9000", "file:///path" (one address per
  // line, re-read on change) or "dns://name:port" (re-resolved every dns_refresh_interval and
  // after an endpoint fails). The first lookup happens here, on the caller's thread (bounded
  // by a 2 s timeout), so a bad name or an unreachable registry is this call's error; after
  // that, an origin out of reach leaves the endpoints as they were last known. Endpoints that
  // join later take calls only once they have answered (a connect or their health watch),
  // while others that have answered are usable.
  static task<expected<std::shared_ptr<load_balancer>, rpc_error>> open(std::string url,
                                                                        lb_config config = {});
  ~load_balancer();
  // The endpoints followed now.
  std::vector<lb_endpoint> endpoints() const;
  // False when lb_config::max_endpoints are followed already (or the address is followed).
  bool add_endpoint(lb_endpoint endpoint);
  // Stops routing to it; its pool (and connections) go away once calls on it have ended.
  bool remove_endpoint(const std::string& address);

  // The pool's calls, on the endpoint the policy picks. A call that could not reach its
  // endpoint (connect_failed, or rpc_error::request_unsent()) is sent once more, elsewhere:
  // each attempt gets its own copy of the arguments. The call's deadline (its timeout, or
  // the pool's request_timeout) covers every attempt, and any probe it waits for.
  template <auto F, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> call(Args... args) {
    if (!config_.methods.empty()) [[unlikely]] {
      return configured<F>(call_options{}, false, std::move(args)...);
    }
    return routed<expected<detail::client_result_t<F>, rpc_error>>(
        [](client_pool& p, std::chrono::milliseconds t, Args&... a) {
          return t.count() < 0 ? p.template call<F>(a...) : p.template call_for<F>(t, a...);
        },
        protocol::function_id_v<F>, retry_rules{}, std::chrono::milliseconds(-1), {},
        std::move(args)...);
  }
  template <auto F, class Rep, class Period, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> call_for(
      std::chrono::duration<Rep, Period> timeout, Args... args) {
    if (!config_.methods.empty()) [[unlikely]] {
      return configured<F>(call_options{ceil_ms(timeout), {}}, true, std::move(args)...);
    }
    return routed<expected<detail::client_result_t<F>, rpc_error>>(
        [](client_pool& p, std::chrono::milliseconds t, std::chrono::duration<Rep, Period>& asked,
           Args&... a) {
          return t.count() < 0 ? p.template call_for<F>(asked, a...)
                               : p.template call_for<F>(t, a...);
        },
        protocol::function_id_v<F>, retry_rules{},
        std::chrono::ceil<std::chrono::milliseconds>(timeout), {}, timeout, std::move(args)...);
  }
  template <auto F, class... Args>
  task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> call_with(
      call_options options, Args... args) {
    if (!config_.methods.empty() || options.hedging != nullptr) [[unlikely]] {
      return configured_with<F>(options, std::move(args)...);
    }
    return routed_with<F>(retry_rules{}, options, std::move(args)...);
  }

  // Streams, opened on the endpoint the policy picks (a failure to open counts against it).
  template <auto F, class... Args>
  task<expected<stream_reader_t<F>, rpc_error>> stream(Args... args) {
    return routed<expected<stream_reader_t<F>, rpc_error>>(
        [](client_pool& p, std::chrono::milliseconds, Args&... a) {
          return p.template stream<F>(a...);
        },
        0, retry_rules{}, std::chrono::milliseconds(0), {},
        std::move(args)...);  // streams: the never-sent rule only
  }
  template <auto F, class... Args>
  task<expected<open_stream_t<F>, rpc_error>> open_stream(Args... args) {
    return routed<expected<open_stream_t<F>, rpc_error>>(
        [](client_pool& p, std::chrono::milliseconds, Args&... a) {
          return p.template open_stream<F>(a...);
        },
        0, retry_rules{}, std::chrono::milliseconds(0), {},
        std::move(args)...);  // streams: the never-sent rule only
  }

  std::vector<lb_endpoint_stats> stats() const;
  lb_stats balancer_stats() const;

 private:
  using steady = std::chrono::steady_clock;
  struct node {
    node() = default;
    node(const node&) = delete;
    node& operator=(const node&) = delete;
    ~node();               // gives its metrics entry back
    lb_endpoint endpoint;  // address fixed; id and weight change under the balancer's mutex
    std::shared_ptr<client_pool> pool;
    std::atomic<unsigned> weight{1};
    std::atomic<std::size_t> in_flight{0};
    std::atomic<std::uint64_t> calls{0}, failures{0};
    detail::endpoint_health health;
    metrics::lb_counters* metrics = nullptr;  // null: metrics off
    // Kept alive by the pool's configuration, which holds the metrics object.
    metrics::client_registry* registry = nullptr;
    std::shared_ptr<detail::health_follower> follower;  // null: follow_health off
    // Has answered (a connect, a call or its health watch), or was named by the user: only
    // then does it take calls while others that have answered are usable.
    std::atomic<bool> proven{false};
    std::atomic<bool> removed{false};  // left the balancer: its warm-up stops
    // Ejection state, read by pick() without a lock; written under `mutex` (failures only).
    std::atomic<steady::rep> ejected_until{0};  // steady ticks; 0 = not ejected
    std::atomic<unsigned> ejections{0};
    std::atomic<unsigned> timeouts_in_a_row{0};
    std::atomic<bool> probing{false};  // a probe call is out; others still avoid the endpoint
    std::mutex mutex;
    long long current_weight = 0;  // weighted_round_robin, under the balancer's wrr_mutex_
    // Its consistent-hash point positions for `ring_id`, under the balancer's mutex: a
    // rebuild hashes only the endpoints that are new (or changed their id).
    std::vector<std::uint64_t> ring_points;
    std::string ring_id;
  };
  struct view;  // the published set: nodes in a stable order and their ring
  struct picked {
    std::shared_ptr<const view> v;  // holds the node (and its pool) while the call runs
    node* n = nullptr;
    bool probe = false;  // no other endpoint is usable: the call waits for this probe
  };
  struct reactor_views;  // each client reactor's own hold on the published view
  explicit load_balancer(lb_config config);
  // The caller's index among the client's reactors, or no_reactor.
  static constexpr std::size_t no_reactor = static_cast<std::size_t>(-1);
  std::size_t caller_reactor() const noexcept;
  // The published view, for a call: on a client reactor through that reactor's own hold, so
  // calls on different reactors share no lock and no reference count.
  std::shared_ptr<const view> load_view(std::size_t reactor);
  // `avoid`: an endpoint the call could not reach a moment ago.
  expected<picked, rpc_error> pick(std::string_view hash_key, const node* avoid,
                                   steady::time_point now);
  node* pick_among(const view& v, std::string_view hash_key, const node* avoid,
                   steady::time_point now, int level);
  void report(node& n, bool probe, rpc_errc result);
  // The probe of an ejected endpoint: its health method, so no user call risks a dead one.
  // Runs in the background while other endpoints are usable; a call that has only this
  // endpoint left waits for it, at most `timeout`.
  task<bool> probe(std::shared_ptr<const view> v, node* n, std::chrono::milliseconds timeout);
  void start_probe(std::shared_ptr<const view> v, node* n);
  std::shared_ptr<node> make_node(lb_endpoint endpoint, bool trusted);
  // Builds and publishes a view of `nodes` (sorted here); under mutex_.
  void publish_locked(std::vector<std::shared_ptr<node>> nodes, steady::time_point hold_until);
  // What open()'s source hands over: the whole set, applied as a difference.
  void set_endpoints(std::vector<lb_endpoint> endpoints);
  void count_over_limit(std::size_t n);
  // An empty update held past lb_config::empty_update_grace is applied now.
  void expire_hold(const view* held);
  // The node's health watch (follow_health); stop it once the node has left the view.
  void follow(const std::shared_ptr<node>& n);
  void retire(node& n);
  // An ejected node whose watch has said serving since is ejected no more.
  bool readmitted(node& n);
  // Under n.mutex: ends n's ejection.
  void restore_locked(node& n);
  // Milliseconds left before `deadline` (at least 1), or -1 when there is none.
  static std::chrono::milliseconds left(std::optional<steady::time_point> deadline);
  // lb_config::retry (lb_retry.cpp): books one attempt's outcome in the budget; whether a
  // call of `method` that failed with `code` may be sent again (a retry the budget holds
  // back is counted here; one that is sent, by the caller); the jittered pause before retry
  // `n` (1 = the first).
  void note_attempt(rpc_errc code) noexcept;
  // `idempotent`: what lb_config::methods says of the method (retry_rules); -1: whether
  // lb_config::retry lists it.
  bool retry_allowed(std::uint32_t method, signed char idempotent, rpc_errc code) noexcept;
  // The errors that say a call did not run, or may be run again.
  static bool retryable(rpc_errc code) noexcept;
  std::chrono::milliseconds backoff(unsigned n) const;
  static std::int64_t milli_tokens(double tokens) noexcept;
  // The back-off itself: a frame of its own, made only when a retry waits (and keeping the
  // timers out of this header).
  static task<void> wait(std::chrono::milliseconds d);

  // What lb_config::methods says about sending a method's call again (small: it rides in
  // every balanced call's frame): attempts, 0 = lb_config::retry's; idempotent, -1 = whether
  // lb_config::retry lists the method.
  struct retry_rules {
    unsigned char max_attempts = 0;
    signed char idempotent = -1;
  };
  static retry_rules rules_of(const method_policy& m) noexcept {
    retry_rules r;
    if (m.max_attempts)
      r.max_attempts = static_cast<unsigned char>(std::min(*m.max_attempts, 255u));
    if (m.idempotent) r.idempotent = *m.idempotent ? 1 : 0;
    return r;
  }
  // A call_for timeout in whole milliseconds, rounded up and never 0 (which means no deadline).
  template <class Rep, class Period>
  static std::chrono::milliseconds ceil_ms(std::chrono::duration<Rep, Period> d) {
    return std::max(std::chrono::ceil<std::chrono::milliseconds>(d), std::chrono::milliseconds(1));
  }
  // Hedged: an idempotent method whose hedging sends more than one copy.
  static bool hedges(const method_policy& m) noexcept {
    return m.hedging && m.hedging->max_copies > 1 && m.idempotent.value_or(false);
  }
  template <auto F, class... Args>
  task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> routed_with(
      retry_rules rules, call_options options, Args... args) {
    const auto timeout = options.timeout;
    const std::string_view key = options.hash_key;  // the caller's, alive while it awaits
    return routed<expected<with_attachment<detail::client_result_t<F>>, rpc_error>>(
        [](client_pool& p, std::chrono::milliseconds t, call_options& asked, Args&... a) {
          call_options o = asked;
          if (t.count() >= 0) o.timeout = t;  // else: no deadline, as the caller asked
          return p.template call_with<F>(o, a...);
        },
        protocol::function_id_v<F>, rules, timeout, key, std::move(options), std::move(args)...);
  }
  // The calls of a method with an entry in lb_config::methods (kept out of the common path).
  // `timed`: the caller gave a timeout, which wins over the method's.
  template <auto F, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> configured(call_options options, bool timed,
                                                                   Args... args) {
    const method_policy m = config_.methods.resolve<F>();
    if (!timed && m.timeout) options.timeout = *m.timeout;
    if (!options.compress) options.compress = m.compress;
    if (hedges(m)) return without_attachment<F>(hedged<F>(*m.hedging, options, std::move(args)...));
    return without_attachment<F>(routed_with<F>(rules_of(m), options, std::move(args)...));
  }
  template <auto F, class... Args>
  task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> configured_with(
      call_options options, Args... args) {
    method_policy m = config_.methods.resolve<F>();
    if (options.hedging != nullptr) {  // the call's own, over its method's
      m.hedging = *options.hedging;
      if (options.hedging->max_copies > 1) m.idempotent = true;
    }
    if (options.timeout.count() < 0 && m.timeout) options.timeout = *m.timeout;
    if (!options.compress) options.compress = m.compress;
    if (hedges(m)) return hedged<F>(*m.hedging, options, std::move(args)...);
    return routed_with<F>(rules_of(m), options, std::move(args)...);
  }
  template <auto F>
  static task<expected<detail::client_result_t<F>, rpc_error>> without_attachment(
      task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> t) {
    auto r = co_await std::move(t);
    if (!r) co_return unexpected(std::move(r).error());
    if constexpr (std::is_void_v<detail::client_result_t<F>>) {
      co_return expected<void, rpc_error>{};
    } else {
      co_return std::move(r->value);
    }
  }
  // A hedged call (lb_hedged_call.hpp): copies on different endpoints, the first answer wins.
  template <auto F, class... Args>
  task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> hedged(
      hedging_policy h, call_options options, Args... args);
  template <auto F, class Race, class... Args>
  static detail::detached hedge_copy(std::shared_ptr<load_balancer> self,
                                     std::shared_ptr<Race> race, std::size_t index, picked p,
                                     call_options options, Args... args);
  // An endpoint for another copy of a hedged call: none of `used`, and not one to probe.
  std::optional<picked> pick_unused(std::string_view hash_key, const std::vector<node*>& used,
                                    steady::time_point now);
  // The wait before a method's next copy (hedging_policy::delay_quantile); a copy's latency.
  std::chrono::milliseconds hedge_delay(std::uint32_t method, const hedging_policy& h) const;
  void note_latency(std::uint32_t method, std::chrono::nanoseconds d);
  // Whether the retry budget lets another copy go (a throttled one is counted); whether it
  // has more than half its tokens (or there is no budget).
  bool hedge_allowed() noexcept;
  bool budget_left() const noexcept;
  // Retries and hedges sent, won or held back (lb_stats, and corvid_lb_retries_total and
  // corvid_lb_hedges_total when client metrics are on); not counted per call otherwise.
  enum class policy_count { retry, retry_throttled, hedge, hedge_won, hedge_throttled };
  void count(policy_count c) noexcept;

  // The one coroutine of a balanced call (the public functions above are not coroutines, so a
  // call has one frame): `invoke` is captureless and gets this frame's copy of the arguments,
  // which each attempt copies again.
  template <class R, class Invoke, class... Args>
  task<R> routed(Invoke invoke, std::uint32_t method, retry_rules rules,
                 std::chrono::milliseconds timeout, std::string_view hash_key, Args... args) {
    // negative: the pool's request_timeout; 0: none.
    if (timeout.count() < 0) timeout = config_.pool.client.request_timeout;
    const steady::time_point start = steady::now();
    std::optional<steady::time_point> deadline;
    if (timeout.count() > 0) deadline = start + timeout;
    const node* avoid = nullptr;
    std::shared_ptr<const view> avoid_view;  // keeps `avoid` alive between attempts
    bool by_policy = false;  // this attempt is a retry_policy's, not the never-sent rule's
    for (unsigned attempt = 0, probes = 0;;) {
      // The common call (its first pick, no probe) reads the clock once, at its start.
      const bool first = attempt == 0 && probes == 0;
      auto p = pick(hash_key, avoid, first ? start : steady::now());
      // A policy's retry goes elsewhere where it can, else to the same endpoint again.
      if (!p && by_policy) p = pick(hash_key, nullptr, steady::now());
      if (!p) co_return unexpected(std::move(p).error());
      // A failed probe re-ejects the endpoint, so the next pick goes elsewhere.
      if (p->probe && !co_await probe(p->v, p->n, left(deadline))) {
        if (deadline && steady::now() >= *deadline) {
          co_return unexpected(
              rpc_error(rpc_errc::timeout, "the deadline passed while probing an endpoint"));
        }
        if (++probes > 8) {
          co_return unexpected(rpc_error(rpc_errc::connect_failed, "no endpoint answers"));
        }
        continue;
      }
      const bool at_start = first && !p->probe;
      if (!at_start && deadline && steady::now() >= *deadline) {
        co_return unexpected(rpc_error(rpc_errc::timeout, "deadline passed before a retry"));
      }
      node& n = *p->n;
      if (p->probe) n.in_flight.fetch_add(1, std::memory_order_relaxed);  // pick() counts others
      const auto t =
          at_start ? (deadline ? timeout : std::chrono::milliseconds(-1)) : left(deadline);
      R r = co_await invoke(*n.pool, t, args...);
      n.in_flight.fetch_sub(1, std::memory_order_relaxed);
      const rpc_errc code = r.has_value() ? rpc_errc::ok : r.error().code();
      report(n, false, code);
      // A call that never reached its server (it stopped, died, or refused the connection)
      // is safe to send once more, to another endpoint.
      by_policy = false;
      if (!r && attempt == 0 && (code == rpc_errc::connect_failed || r.error().request_unsent())) {
        // sent again below, as the never-sent rule's
      } else if (const unsigned attempts =
                     rules.max_attempts != 0 ? rules.max_attempts : config_.retry.max_attempts;
                 attempts > 1 && method != 0) {
        note_attempt(code);
        if (r || attempt + 1 >= attempts || !retry_allowed(method, rules.idempotent, code)) {
          co_return r;
        }
        // The back-off, unless it would end past the deadline: then this error is the answer.
        const auto pause = backoff(attempt + 1);
        if (deadline && steady::now() + pause >= *deadline) co_return r;
        count(policy_count::retry);
        if (pause.count() > 0) co_await wait(pause);
        by_policy = true;
      } else {
        co_return r;
      }
      avoid = p->n;
      avoid_view = std::move(p->v);
      ++attempt;
    }
  }

  const lb_config config_;
  mutable std::mutex mutex_;  // membership changes; never taken by a call
  std::atomic<std::shared_ptr<const view>> view_;
  // Bumped after each publish: a reactor's hold older than this is renewed at its next call.
  std::atomic<std::uint64_t> generation_{1};
  std::shared_ptr<reactor_views> reactor_views_;  // shared with the resets publish() posts
  // Round robin's turn: one counter for every caller, so a caller's calls go round exactly
  // even when it resumes on different reactors.
  std::atomic<std::size_t> next_{0};
  // Endpoints with ejections (counted on each change between none and some, under their
  // mutex): while 0, a pick skips looking for probes to start.
  std::atomic<std::size_t> ejected_{0};
  std::mutex wrr_mutex_;  // weighted_round_robin's smooth weights
  std::atomic<std::uint64_t> rejected_over_limit_{0}, empty_updates_held_{0};
  // The retry budget's tokens, in thousandths; starts full.
  std::atomic<std::int64_t> retry_tokens_;
  // Retries and hedges (policy_count), also added to the client metrics' totals.
  std::array<std::atomic<std::uint64_t>, 5> policy_counts_{};
  metrics::client_registry* registry_ = nullptr;  // null: client metrics off
  // hedging_policy::delay_quantile: recent latencies of the methods that use it.
  std::unique_ptr<detail::latency_windows> latencies_;
  // Under mutex_: the addresses the last update listed past max_endpoints (no more than the
  // source holds: twice max_endpoints at most).
  std::unordered_set<std::string> over_limit_;
  std::unique_ptr<discovery::endpoint_source> source_;            // open(); stopped first
  std::atomic<discovery::endpoint_source*> source_ptr_{nullptr};  // for report()
};

}  // namespace corvid

#include "corvid/client/lb_hedged_call.hpp"
