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
#include "corvid/task.hpp"

namespace asio {
class io_context;
}

namespace corvid {

namespace metrics {
struct pool_counters;  // src/metrics: this endpoint's pool counters (client_config::metrics)
}

class client_pool : public std::enable_shared_from_this<client_pool> {
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
  // another reactor (pool_stats::cross_reactor_calls).
  task<expected<lease, rpc_error>> acquire();

  // A call whose connection broke before its request was written (rpc_error::
  // request_unsent()) is retried once on another connection: the server never saw it.
  template <auto F, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> call(Args... args) {
    for (int attempt = 0;; ++attempt) {
      lease l;
      if (!pick(l)) {
        auto slow = co_await acquire_slow();
        if (!slow) co_return unexpected(std::move(slow).error());
        l = std::move(*slow);
      }
      auto r = co_await l.client->template call<F>(args...);
      if (r || attempt > 0 || !r.error().request_unsent()) co_return r;
      count_retry();
    }
  }
  template <auto F, class Rep, class Period, class... Args>
  task<expected<detail::client_result_t<F>, rpc_error>> call_for(
      std::chrono::duration<Rep, Period> timeout, Args... args) {
    for (int attempt = 0;; ++attempt) {
      lease l;
      if (!pick(l)) {
        auto slow = co_await acquire_slow();
        if (!slow) co_return unexpected(std::move(slow).error());
        l = std::move(*slow);
      }
      auto r = co_await l.client->template call_for<F>(timeout, args...);
      if (r || attempt > 0 || !r.error().request_unsent()) co_return r;
      count_retry();
    }
  }
  // call_with on a pooled connection (per-call timeout and attachment).
  template <auto F, class... Args>
  task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> call_with(
      call_options options, Args... args) {
    for (int attempt = 0;; ++attempt) {
      lease l;
      if (!pick(l)) {
        auto slow = co_await acquire_slow();
        if (!slow) co_return unexpected(std::move(slow).error());
        l = std::move(*slow);
      }
      auto r = co_await l.client->template call_with<F>(options, args...);
      if (r || attempt > 0 || !r.error().request_unsent()) co_return r;
      count_retry();
    }
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

 private:
  client_pool(std::string endpoint, pool_config config);
  struct entry;           // one connection (pool_snapshot.hpp)
  struct snapshot;        // the usable connections by reactor, as last published
  struct reactor_counts;  // per-reactor call statistics, summed by stats()
  struct retired;         // a replaced snapshot, freed once every reactor has moved on
  static constexpr std::size_t no_reactor = static_cast<std::size_t>(-1);

  // The common path, no mutex: a usable connection on the caller's reactor from the published
  // snapshot. False: acquire_slow() decides (grow, hand off, wait, fail, reap).
  bool pick(lease& out) noexcept;
  task<expected<lease, rpc_error>> acquire_slow();
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
  struct waiter {
    std::coroutine_handle<> handle;
    std::optional<trace_context> trace;
    std::size_t reactor = no_reactor;
  };
  void wake(std::vector<waiter>& waiters);
  struct connect_wait;
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
