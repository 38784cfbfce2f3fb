#include "corvid/client/client_pool.hpp"

#include <algorithm>

#include <asio/steady_timer.hpp>

#include "corvid/detail/detached.hpp"
#include "corvid/runtime/io_pool.hpp"

#include "client_metrics_access.hpp"

namespace corvid {

using steady = std::chrono::steady_clock;

// Suspends until a connect in progress finishes (any of them); no-op if none is.
struct client_pool::connect_wait {
  client_pool* pool;
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) {
    std::lock_guard lk(pool->mutex_);
    if (pool->connecting_ == 0) return false;
    pool->waiters_.push_back({h, detail::capture_trace()});
    return true;
  }
  void await_resume() const noexcept {}
};

struct client_pool::reaper {
  asio::steady_timer timer;
  std::chrono::milliseconds period;
};

void client_pool::arm_reaper(const std::shared_ptr<client_pool>& pool) {
  reaper& r = *pool->reaper_;
  r.timer.expires_after(r.period);
  r.timer.async_wait([w = std::weak_ptr<client_pool>(pool)](const std::error_code& ec) {
    if (ec) return;  // the pool is being destroyed
    auto p = w.lock();
    if (!p) return;
    {
      std::lock_guard lk(p->mutex_);
      p->reap_locked(steady::now());
    }
    arm_reaper(p);  // if `p` is the last reference, the pool (and timer) go when it returns
  });
}

std::shared_ptr<client_pool> client_pool::create(std::string endpoint, pool_config config) {
  std::shared_ptr<client_pool> pool(new client_pool(std::move(endpoint), config));
  // Half the shorter of the two limits: a connection is reaped at most 1.5x its limit late.
  auto period = std::chrono::milliseconds::max();
  if (config.idle_timeout.count() > 0) period = config.idle_timeout / 2;
  if (config.max_connection_age.count() > 0) {
    period = std::min(period, config.max_connection_age / 2);
  }
  if (period != std::chrono::milliseconds::max()) {
    io_pool& reactors = config.client.pool ? *config.client.pool : io_pool::default_pool();
    pool->reaper_.reset(new reaper{asio::steady_timer(reactors.next()),
                                   std::max(period, std::chrono::milliseconds(1))});
    arm_reaper(pool);
  }
  if (!config.lazy_connect) {
    // Start the first connection now; callers arriving meanwhile wait for it.
    [](std::shared_ptr<client_pool> p) -> detail::detached {
      co_await p->acquire();
    }(pool);
  }
  return pool;
}

client_pool::client_pool(std::string endpoint, pool_config config)
    : endpoint_(std::move(endpoint)), config_(config) {
  // config_ holds the metrics object, and so the counters, for the pool's lifetime.
  if (auto* r = detail::client_metrics_access::registry(config_.client.metrics)) {
    metrics_ = &r->pool(endpoint_);
  }
}

client_pool::~client_pool() {
  if (metrics_ == nullptr) return;
  for (const entry& e : entries_) {
    if (!e.connecting) metrics_->connections.fetch_sub(1, std::memory_order_relaxed);
  }
}

pool_stats client_pool::stats() const {
  std::lock_guard lk(mutex_);
  pool_stats s = stats_;
  s.server_reactors = server_reactors_;
  s.max_connections = max_connections_locked();
  s.connections = static_cast<std::size_t>(std::count_if(
      entries_.begin(), entries_.end(), [](const entry& e) { return !e.connecting; }));
  return s;
}

std::size_t client_pool::max_connections_locked() const {
  if (config_.max_connections != 0) return config_.max_connections;
  return std::clamp(server_reactors_, pool_config::auto_min_connections,
                    pool_config::auto_max_connections);
}

std::chrono::milliseconds client_pool::backoff_locked() {
  const auto shift = std::min<std::size_t>(consecutive_failures_ - 1, 20);
  const auto base = std::min(config_.reconnect_backoff_initial * (std::int64_t{1} << shift),
                             config_.reconnect_backoff_max);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  return std::chrono::milliseconds(
      static_cast<std::int64_t>(static_cast<double>(base.count()) * jitter(rng_)));
}

void client_pool::reap_locked(steady::time_point now) {
  // Counts a close into pool_stats and the metrics (closing one connected entry).
  auto closing = [this](std::size_t& count, std::atomic<std::uint64_t> metrics::pool_counters::*m) {
    ++count;
    if (metrics_ == nullptr) return;
    metrics::pool_counters::add(metrics_->*m);
    metrics_->connections.fetch_sub(1, std::memory_order_relaxed);
  };
  std::erase_if(entries_, [&](const entry& e) {
    if (e.connecting || e.client.use_count() > 1) return false;  // in use by a caller
    if (!e.client->is_connected()) {
      // Its calls have already ended with connection_closed.
      closing(stats_.closed_broken, &metrics::pool_counters::closed_broken);
      return true;
    }
    if (e.client->pending_calls() != 0) return false;
    if (config_.idle_timeout.count() > 0 && now - e.last_used >= config_.idle_timeout) {
      closing(stats_.closed_idle, &metrics::pool_counters::closed_idle);
      return true;
    }
    if (config_.max_connection_age.count() > 0 && now - e.created >= config_.max_connection_age) {
      closing(stats_.closed_aged, &metrics::pool_counters::closed_aged);
      return true;
    }
    return false;
  });
}

void client_pool::count_retry() {
  std::lock_guard lk(mutex_);
  ++stats_.retried_unsent;
  if (metrics_ != nullptr) metrics::pool_counters::add(metrics_->retries);
}

void client_pool::wake(std::vector<waiter>& waiters) {
  for (const waiter& w : waiters) detail::resume_traced(w.handle, w.trace);
  waiters.clear();
}

task<expected<client_pool::lease, rpc_error>> client_pool::acquire() {
  auto keep_alive = shared_from_this();  // the pool outlives every suspended acquire
  for (;;) {
    std::shared_ptr<rpc_client> fresh;
    {
      std::unique_lock lk(mutex_);
      const auto now = steady::now();
      reap_locked(now);
      entry* best = nullptr;
      std::size_t best_pending = 0;
      for (auto& e : entries_) {
        if (e.connecting || !e.client->is_connected()) continue;
        if (config_.max_connection_age.count() > 0 && now - e.created >= config_.max_connection_age)
          continue;  // retiring: no new calls
        if (const std::size_t r = e.client->server_reactors(); r != 0) server_reactors_ = r;
        const std::size_t pending = e.client->pending_calls();
        if (best == nullptr || pending < best_pending) {
          best = &e;
          best_pending = pending;
        }
      }
      // Broken connections a caller still holds a lease on are not counted: they take no
      // calls and go away with the lease, and the calls retrying off them need a fresh one.
      const auto live = static_cast<std::size_t>(
          std::count_if(entries_.begin(), entries_.end(),
                        [](const entry& e) { return e.connecting || e.client->is_connected(); }));
      const std::size_t cap = max_connections_locked();
      const bool room = live < cap;
      const bool may_connect = room && now >= next_attempt_;
      // Another connection when the least-loaded one is full, or when the server has
      // reactors without a connection of ours and the pick already has calls in flight.
      const bool spread = config_.spread_in_flight != 0 && live < std::min(server_reactors_, cap) &&
                          best_pending >= config_.spread_in_flight;
      const bool full = best_pending >= config_.max_in_flight_per_connection;
      if (best != nullptr && (!(full || spread) || !may_connect)) {
        best->last_used = now;
        lease l{best->client,
                best->used ? client_reuse_hint::reused : client_reuse_hint::first_use};
        best->used = true;
        co_return l;
      }
      // With no connection up yet and one being made, wait for that one: a second connect
      // for the same first calls would only leave an extra connection behind.
      if (may_connect && (best != nullptr || connecting_ == 0)) {
        client_config cc = config_.client;
        cc.connect_timeout = config_.connect_timeout;
        // The server's reactor count, for the auto cap and spreading.
        if (config_.max_connections == 0 || config_.spread_in_flight != 0)
          cc.ask_server_reactors = true;
        fresh = std::make_shared<rpc_client>(cc);
        entries_.push_back({fresh, now, now, true, true});
        ++connecting_;
        ++stats_.connect_attempts;
      } else if (connecting_ == 0) {
        co_return unexpected(rpc_error(rpc_errc::connect_failed,
                                       "no connection to " + endpoint_ +
                                           ": waiting to retry after " +
                                           std::to_string(consecutive_failures_) +
                                           " failed connect(s); last error: " + last_error_));
      }
    }
    if (!fresh) {
      co_await connect_wait{this};  // another caller's connect: use its result
      continue;
    }
    rpc_error ec = co_await fresh->connect(endpoint_);
    std::vector<waiter> waiters;
    {
      std::lock_guard lk(mutex_);
      --connecting_;
      auto it = std::find_if(entries_.begin(), entries_.end(),
                             [&](const entry& e) { return e.client == fresh; });
      if (ec) {
        entries_.erase(it);
        ++consecutive_failures_;
        ++stats_.connect_failures;
        if (metrics_ != nullptr) metrics::pool_counters::add(metrics_->connects_failed);
        last_error_ = ec.message();
        next_attempt_ = steady::now() + backoff_locked();
      } else {
        it->connecting = false;
        it->last_used = steady::now();
        if (metrics_ != nullptr) {
          metrics::pool_counters::add(metrics_->connects_ok);
          metrics_->connections.fetch_add(1, std::memory_order_relaxed);
        }
        consecutive_failures_ = 0;
      }
      waiters.swap(waiters_);
    }
    wake(waiters);
    if (ec) {
      std::lock_guard lk(mutex_);
      const bool other_usable = std::any_of(entries_.begin(), entries_.end(), [](const entry& e) {
        return !e.connecting && e.client->is_connected();
      });
      if (!other_usable && connecting_ == 0) co_return unexpected(std::move(ec));
      continue;
    }
    co_return lease{std::move(fresh), client_reuse_hint::first_use};
  }
}

}  // namespace corvid
