#pragma once
// client_pool: many callers share a few connections to one endpoint.
//
//   auto pool = corvid::client_pool::create("127.0.0.1:9000", {});
//   auto r = co_await pool->call<echo>("hello");             // expected<std::string, rpc_error>
//   auto q = co_await pool->send_request(
//       [&](corvid::client_reuse_hint, corvid::rpc_client& c) { return c.send_request<echo>("hi");
//       });
//   if (q) auto reply = co_await std::move(*q);
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "corvid/client/pool_config.hpp"
#include "corvid/client/rpc_client.hpp"
#include "corvid/detail/detached.hpp"
#include "corvid/export.hpp"
#include "corvid/task.hpp"

namespace asio {
class io_context;
}

namespace corvid {

namespace metrics {
struct pool_counters;  // src/metrics: this endpoint's pool counters (client_config::metrics)
}
template <auto F, bool WithAttachment, class... Args>
class pooled_call;  // pooled_call.hpp

class CORVID_API client_pool : public std::enable_shared_from_this<client_pool> {
 public:
  // endpoint: "host:port" or "unix:/path".
  static std::shared_ptr<client_pool> create(std::string endpoint, pool_config config = {});
  ~client_pool();
  client_pool(const client_pool&) = delete;
  client_pool& operator=(const client_pool&) = delete;

  // A lease on one pooled connection. Holding it keeps the connection from being reaped.
  struct lease {
    std::shared_ptr<rpc_client> client;
    client_reuse_hint hint = client_reuse_hint::reused;
  };
  // A connection to use now: the least busy one on the caller's reactor (io thread of the
  // client's io_pool), or a new one there while under max_connections when that one is busy
  // (pool_config::spread_in_flight, max_in_flight_per_connection). Only a caller whose reactor
  // has no usable connection, or a caller on no reactor of the pool, gets one living on
  // another reactor (pool_stats::cross_reactor_calls). co_await it for an
  // expected<lease, rpc_error>.
  class acquiring;
  acquiring acquire();

  // A call, as rpc_client's are: co_await yields expected<R, rpc_error> (call_with:
  // expected<with_attachment<R>, rpc_error>). On a reactor with a usable connection the call
  // starts at once on it, as a plain connection's call does; otherwise it starts when awaited
  // (pooled_call.hpp). A call whose connection broke before its request was written
  // (rpc_error::request_unsent()) is retried once on another connection: the server never saw
  // it. The call's deadline covers waiting for a connection too: a connect still in progress
  // at the deadline goes on for the pool (within pool_config::connect_timeout), the call ends
  // with rpc_errc::timeout. A call started on a connection keeps that connection open until it
  // ends, also when the pool is let go meanwhile; it is then not retried.
  template <auto F, class... Args>
  pooled_call<F, false, Args...> call(Args... args) {
    return {*this, call_options{}, std::move(args)...};
  }
  template <auto F, class Rep, class Period, class... Args>
  pooled_call<F, false, Args...> call_for(std::chrono::duration<Rep, Period> timeout,
                                          Args... args) {
    // Rounded up, and never to 0 (no deadline), as rpc_client::call_for does.
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout);
    if (ms.count() < 1) ms = std::chrono::milliseconds(1);
    return {*this, call_options{ms, {}}, std::move(args)...};
  }
  // call_with on a pooled connection (per-call timeout and attachment).
  template <auto F, class... Args>
  pooled_call<F, true, Args...> call_with(call_options options, Args... args) {
    return {*this, options, std::move(args)...};
  }
  // Queues the request on a pooled connection; yields the async_reply to await later.
  template <auto F, class... Args>
  task<expected<async_reply_t<F>, rpc_error>> send_request(Args... args) {
    auto l = co_await acquire();
    if (!l) co_return unexpected(std::move(l).error());
    co_return co_await l->client->template send_request<F>(std::move(args)...);
  }
  // Streams on a pooled connection; a stream stays on the connection it opened on (its
  // reader or writer keeps that connection alive until the stream ends).
  template <auto F, class... Args>
  task<expected<stream_reader_t<F>, rpc_error>> stream(Args... args) {
    auto l = co_await acquire();
    if (!l) co_return unexpected(std::move(l).error());
    co_return co_await l->client->template stream<F>(std::move(args)...);
  }
  template <auto F, class... Args>
  task<expected<open_stream_t<F>, rpc_error>> open_stream(Args... args) {
    auto l = co_await acquire();
    if (!l) co_return unexpected(std::move(l).error());
    co_return co_await l->client->template open_stream<F>(std::move(args)...);
  }
  // The seed's form: `fn(client_reuse_hint, rpc_client&)` returns what rpc_client's
  // send_request returns; yields the async_reply (or the error of getting a connection).
  template <class Fn>
    requires std::is_invocable_v<Fn&, client_reuse_hint, rpc_client&>
  auto send_request(Fn fn) -> task<
      expected<decltype(std::declval<std::invoke_result_t<Fn&, client_reuse_hint, rpc_client&>>()
                            .await_resume()),
               rpc_error>> {
    auto l = co_await acquire();
    if (!l) co_return unexpected(std::move(l).error());
    co_return co_await fn(l->hint, *l->client);
  }

  pool_stats stats() const;
  const std::string& endpoint() const noexcept { return endpoint_; }

  // What acquire() returns. A connection on the caller's reactor is picked when acquire() is
  // called, with no coroutine; only a caller left to wait for one (or on no reactor of the
  // pool) runs the coroutine that waits, when it awaits.
  class [[nodiscard]] acquiring {
   public:
    bool await_ready() const noexcept { return !slow_.valid(); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) {
      return slow_.operator co_await().await_suspend(caller);
    }
    expected<lease, rpc_error> await_resume() {
      if (!slow_.valid()) return std::move(picked_);
      return slow_.operator co_await().await_resume();
    }

   private:
    friend class client_pool;
    acquiring() = default;
    lease picked_;
    task<expected<lease, rpc_error>> slow_;
  };

 private:
  template <auto F, bool WithAttachment, class... Args>
  friend class pooled_call;
  client_pool(std::string endpoint, pool_config config);
  template <auto F, bool A>
  using call_result_t = typename detail::call_state<detail::client_result_t<F>, A>::result_type;
  // Starts F on `client` (rpc_client keeps start private to its friends).
  template <auto F, bool A, class... Args>
  static auto start_on(rpc_client& client, call_options options, Args&... args) {
    return client.template start<F, A>(options, args...);
  }
  // A call that waits for a connection first (or is the retry of one that was never sent);
  // `attempt` > 0: no further retry.
  template <auto F, bool A, class... Args>
  static task<call_result_t<F, A>> slow_call(std::shared_ptr<client_pool> self,
                                             call_options options, int attempt, Args... args) {
    // A call given no timeout has its method's (client_config::methods) here too: the wait
    // for a connection is part of it.
    if (options.timeout.count() < 0 && !self->config_.client.methods.empty()) {
      if (auto own = self->config_.client.methods.template resolve<F>().timeout)
        options.timeout = *own;  // at least 1 ms (method_config::set)
    }
    for (;; ++attempt) {
      lease l;
      call_options o = options;
      if (!self->pick(l)) {
        const auto deadline = self->deadline_for(options.timeout);
        auto slow = co_await self->acquire_slow(deadline);
        if (!slow) co_return unexpected(std::move(slow).error());
        l = std::move(*slow);
        if (const auto left = left_of(deadline); left.count() >= 0) o.timeout = left;
      }
      auto r = co_await reply_awaitable(start_on<F, A>(*l.client, o, args...));
      if (r || attempt > 0 || !r.error().request_unsent()) co_return r;
      self->count_retry();
    }
  }
  // The pool that made `client`, if it still exists (a retry needs it).
  static std::shared_ptr<client_pool> owner_of(const rpc_client& client) noexcept;
  struct entry;           // one connection (pool_snapshot.hpp)
  struct snapshot;        // the usable connections by reactor, as last published
  struct reactor_counts;  // per-reactor call statistics, summed by stats()
  struct retired;         // a replaced snapshot, freed once every reactor has moved on
  static constexpr std::size_t no_reactor = static_cast<std::size_t>(-1);

  // The common path, no mutex: a usable connection on the caller's reactor from the published
  // snapshot. False: acquire_slow() decides (grow, hand off, wait, fail, reap).
  bool pick(lease& out) noexcept;
  using time_point = std::chrono::steady_clock::time_point;
  static constexpr time_point no_deadline = time_point::max();
  // Waits for a connect past `deadline` for no caller: rpc_errc::timeout then.
  task<expected<lease, rpc_error>> acquire_slow(time_point deadline = no_deadline);
  // The deadline of a call with `timeout` from now (negative: the pool's request_timeout;
  // 0: none), and what is left of it (at least 1 ms; -1 when there is none).
  time_point deadline_for(std::chrono::milliseconds timeout) const noexcept;
  static std::chrono::milliseconds left_of(time_point deadline) noexcept;
  // The index of the caller's reactor in the client's io_pool; no_reactor off its threads.
  std::size_t caller_reactor() const noexcept;
  // Under mutex_: where a caller on no reactor of the pool gets its new connection.
  std::size_t least_used_reactor_locked() const;
  // Under mutex_: closes broken, idle and aged connections nobody holds.
  void reap_locked(std::chrono::steady_clock::time_point now);
  // Under mutex_: publishes a snapshot of entries_; the one it replaces (and the connections
  // closed since) is freed once every reactor has run a handler after the swap, as a caller
  // reading it never suspends while it does.
  void publish_locked();
  void release_retired(std::uint64_t generation);
  std::chrono::milliseconds backoff_locked();
  // pool_config::max_connections, or auto's value for the reactors the server stated.
  std::size_t max_connections_locked() const;
  void count_retry();
  void count_cross(std::size_t reactor) noexcept;
  // Resumes coroutines waiting for a connect to finish (after mutex_ is released), each on its
  // own reactor (callers from other threads: on the caller's, the new connection's), with the
  // trace context it waited in.
  struct wait_deadline;  // a waiter's timer, and who resumed it first
  struct waiter {
    std::coroutine_handle<> handle;
    std::optional<trace_context> trace;
    std::size_t reactor = no_reactor;
    std::shared_ptr<wait_deadline> deadline;  // null: it waits for the connect however long
  };
  void wake(std::vector<waiter>& waiters);
  struct connect_wait;
  // One connect the pool makes, run apart from the caller that asked for it: its outcome
  // lands in the pool and wakes the waiters even when that caller's deadline came first. It
  // does not keep the pool: one let go closes its connects (~client_pool).
  struct connect_attempt;
  // Under mutex_: a connecting entry on `reactor`, counted; run_connect() makes it connect.
  std::shared_ptr<connect_attempt> begin_connect_locked(std::size_t reactor, time_point now);
  static detail::detached run_connect(std::weak_ptr<client_pool> pool, std::string endpoint,
                                      std::shared_ptr<connect_attempt> a);
  // A timer on one of the client's reactors that reaps idle and aged connections (and
  // publishes the snapshot without them): a pool that went quiet must not keep its sockets,
  // and their heartbeats, forever. Holds only a weak reference to the pool.
  struct reaper;
  static void arm_reaper(const std::shared_ptr<client_pool>& pool);
  std::unique_ptr<reaper> reaper_;

  const std::string endpoint_;
  const pool_config config_;
  std::vector<asio::io_context*> reactors_;   // the client's io_pool, by index
  std::unique_ptr<reactor_counts[]> counts_;  // reactors_.size() + 1 (the last: other threads)
  std::atomic<const snapshot*> published_{nullptr};
  mutable std::mutex mutex_;
  std::shared_ptr<const snapshot> current_;  // what published_ points to
  std::vector<std::unique_ptr<entry>> entries_;
  // Closed connections a published snapshot may still name, until its readers have moved on.
  std::vector<std::pair<std::uint64_t, std::unique_ptr<entry>>> closed_;
  std::uint64_t generation_ = 0;
  std::vector<waiter> waiters_;
  std::size_t connecting_ = 0;
  std::size_t consecutive_failures_ = 0;
  std::size_t server_reactors_ = 0;  // as a connection last heard it; 0 = not stated
  std::chrono::steady_clock::time_point next_attempt_{};
  std::string last_error_;
  pool_stats stats_;
  metrics::pool_counters* metrics_ = nullptr;  // null: metrics off
  std::minstd_rand rng_{std::random_device{}()};
};

}  // namespace corvid

#include "corvid/client/pooled_call.hpp"  // needs client_pool complete
