#include "corvid/client/client_pool.hpp"

#include <algorithm>

#include "corvid/detail/detached.hpp"
#include "corvid/runtime/io_pool.hpp"

#include "../runtime/asio_all.hpp"
#include "background.hpp"
#include "client_metrics_access.hpp"
#include "pool_snapshot.hpp"
#include "reactor_index.hpp"

namespace corvid {

using steady = std::chrono::steady_clock;

// A waiter's deadline: a timer on the waiter's reactor, and which of the connect's wake-up and
// the timer resumed it (the other then leaves it alone). Shared by the waiter's entry in
// waiters_ and the timer's handler, so neither depends on the waiting frame.
struct client_pool::wait_deadline {
  explicit wait_deadline(asio::io_context& ctx) : timer(ctx) {}
  asio::steady_timer timer;
  std::atomic<bool> resumed{false};
};

// Suspends until a connect in progress finishes (any of them) or `deadline` passes; no-op if
// none is in progress.
struct client_pool::connect_wait {
  client_pool* pool;
  time_point deadline;
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) {
    const std::size_t reactor = pool->caller_reactor();
    std::lock_guard lk(pool->mutex_);
    if (pool->connecting_ == 0) return false;
    auto trace = detail::capture_trace();
    std::shared_ptr<wait_deadline> d;
    if (deadline != no_deadline) {
      // A caller on no reactor of the pool is timed on the first one.
      d = std::make_shared<wait_deadline>(*pool->reactors_[reactor == no_reactor ? 0 : reactor]);
      d->timer.expires_at(deadline);
    }
    pool->waiters_.push_back({h, trace, reactor, d});
    // Armed last: from here the frame may run on the timer's reactor; only locals are used.
    if (d) {
      d->timer.async_wait([d, h, trace = std::move(trace)](const std::error_code&) {
        if (d->resumed.exchange(true, std::memory_order_acq_rel)) return;  // woken already
        detail::resume_traced(h, trace);
      });
    }
    return true;
  }
  void await_resume() const noexcept {}
};

struct client_pool::connect_attempt {
  std::shared_ptr<rpc_client> client;
  // Under mutex_: set once the connect has ended, with its error (empty: connected).
  bool done = false;
  rpc_error ec;
};

struct client_pool::reaper {
  asio::steady_timer timer;
  std::chrono::milliseconds period;
};

// One replaced snapshot, with a handler queued on every reactor: the last to run knows every
// reader of it has finished, and frees the connections closed before it was replaced. A handler
// dropped unrun (its reactor stopped) leaves them to the pool's destructor.
struct client_pool::retired {
  std::shared_ptr<const snapshot> snap;
  std::weak_ptr<client_pool> pool;
  std::uint64_t generation;
  std::atomic<std::size_t> remaining;
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
  // Calls mark a connection used without a clock; the reaper notes the time it sees the mark,
  // up to a period late, so the period is a quarter of the idle limit: a connection is reaped
  // at most 1.5x its limit late. Half the age limit: ages are exact.
  auto period = std::chrono::milliseconds::max();
  if (config.idle_timeout.count() > 0) period = config.idle_timeout / 4;
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
    std::shared_ptr<connect_attempt> first;
    {
      std::lock_guard lk(pool->mutex_);
      first = pool->begin_connect_locked(pool->least_used_reactor_locked(), steady::now());
    }
    run_connect(pool, pool->endpoint_, std::move(first));
  }
  return pool;
}

client_pool::client_pool(std::string endpoint, pool_config config)
    : endpoint_(std::move(endpoint)), config_(config) {
  // config_ holds the metrics object, and so the counters, for the pool's lifetime.
  if (auto* r = detail::client_metrics_access::registry(config_.client.metrics)) {
    metrics_ = &r->pool(endpoint_);
  }
  io_pool& reactors = config_.client.pool ? *config_.client.pool : io_pool::default_pool();
  for (std::size_t i = 0; i < reactors.size(); ++i) reactors_.push_back(&reactors.at(i));
  counts_ = std::make_unique<reactor_counts[]>(reactors_.size() + 1);
  std::lock_guard lk(mutex_);
  publish_locked();
}

client_pool::~client_pool() {
  // A connect still in progress serves nobody now: it ends at once, not at its timeout.
  for (const auto& e : entries_) {
    if (e->connecting) e->client->close();
  }
  if (metrics_ == nullptr) return;
  for (const auto& e : entries_) {
    if (!e->connecting) metrics_->connections.fetch_sub(1, std::memory_order_relaxed);
  }
  // config_ still holds the metrics object: the entry goes back while its registry lives.
  detail::client_metrics_access::registry(config_.client.metrics)->release(*metrics_);
}

pool_stats client_pool::stats() const {
  std::lock_guard lk(mutex_);
  pool_stats s = stats_;
  s.server_reactors = server_reactors_;
  s.max_connections = max_connections_locked();
  s.connections = static_cast<std::size_t>(std::count_if(
      entries_.begin(), entries_.end(), [](const auto& e) { return !e->connecting; }));
  for (std::size_t i = 0; i <= reactors_.size(); ++i) {
    s.cross_reactor_calls += counts_[i].cross.load(std::memory_order_relaxed);
  }
  return s;
}

std::size_t client_pool::max_connections_locked() const {
  if (config_.max_connections != 0) return config_.max_connections;
  return std::clamp(server_reactors_, pool_config::auto_min_connections,
                    pool_config::auto_max_connections);
}

std::size_t client_pool::caller_reactor() const noexcept {
  static_assert(no_reactor == detail::no_reactor_index);
  return detail::caller_reactor_index(reactors_);
}

void client_pool::count_cross(std::size_t reactor) noexcept {
  if (reactor == no_reactor) {
    counts_[reactors_.size()].cross.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Only that reactor's thread writes its counter.
    auto& c = counts_[reactor].cross;
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

std::size_t client_pool::least_used_reactor_locked() const {
  std::size_t best = 0, best_count = 0;
  for (std::size_t i = 0; i < reactors_.size(); ++i) {
    const auto count = static_cast<std::size_t>(std::count_if(
        entries_.begin(), entries_.end(), [&](const auto& e) { return e->reactor == i; }));
    if (i == 0 || count < best_count) {
      best = i;
      best_count = count;
    }
  }
  return best;
}

std::chrono::milliseconds client_pool::backoff_locked() {
  const auto shift = std::min<std::size_t>(consecutive_failures_ - 1, 20);
  const auto base = std::min(config_.reconnect_backoff_initial * (std::int64_t{1} << shift),
                             config_.reconnect_backoff_max);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  return std::chrono::milliseconds(
      static_cast<std::int64_t>(static_cast<double>(base.count()) * jitter(rng_)));
}

void client_pool::publish_locked() {
  auto s = std::make_shared<snapshot>();
  const std::size_t n = reactors_.size();
  s->begins.assign(n + 1, 0);
  std::size_t live = 0;
  // Only connected entries: a broken one takes no calls, even while a lease keeps it.
  std::vector<entry*> usable;
  for (const auto& e : entries_) {
    if (e->connecting) {
      ++live;
    } else if (e->client->is_connected()) {
      ++live;
      usable.push_back(e.get());
      ++s->begins[e->reactor + 1];
    }
  }
  for (std::size_t i = 0; i < n; ++i) s->begins[i + 1] += s->begins[i];
  s->conns.resize(s->begins[n]);
  std::vector<std::uint32_t> at(s->begins.begin(), s->begins.end() - 1);
  for (entry* e : usable) s->conns[at[e->reactor]++] = {e, e->client->conn_.get(), e->created};
  const std::size_t cap = max_connections_locked();
  s->live = live;
  s->room = live < cap;
  s->spread_below = std::min(server_reactors_, cap);
  s->server_reactors = server_reactors_;
  s->next_attempt = next_attempt_;
  std::shared_ptr<const snapshot> old = std::move(current_);
  current_ = std::move(s);
  published_.store(current_.get(), std::memory_order_release);
  if (!old) return;
  auto r = std::make_shared<retired>();
  r->snap = std::move(old);
  r->pool = weak_from_this();
  r->generation = ++generation_;
  r->remaining.store(n, std::memory_order_relaxed);
  for (asio::io_context* reactor : reactors_) {
    asio::post(*reactor, [r] {
      if (r->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      if (auto p = r->pool.lock()) p->release_retired(r->generation);
    });
  }
}

void client_pool::release_retired(std::uint64_t generation) {
  std::vector<std::unique_ptr<entry>> gone;  // destroyed after the mutex is released
  std::lock_guard lk(mutex_);
  std::erase_if(closed_, [&](auto& c) {
    if (c.first > generation) return false;
    gone.push_back(std::move(c.second));
    return true;
  });
}

void client_pool::reap_locked(steady::time_point now) {
  // Counts a close into pool_stats and the metrics (closing one connected entry).
  auto closing = [this](std::size_t& count, std::atomic<std::uint64_t> metrics::pool_counters::*m) {
    ++count;
    if (metrics_ == nullptr) return;
    metrics::pool_counters::add(metrics_->*m);
    metrics_->connections.fetch_sub(1, std::memory_order_relaxed);
  };
  const std::size_t before = entries_.size();
  std::erase_if(entries_, [&](std::unique_ptr<entry>& p) {
    entry& e = *p;
    if (e.connecting) return false;
    if (const auto uses = e.uses.load(std::memory_order_relaxed); uses != e.uses_seen) {
      e.uses_seen = uses;
      e.last_used = now;
    }
    if (e.client.use_count() > 1) return false;  // in use by a caller
    bool close = false;
    if (!e.client->is_connected()) {
      // Its calls have already ended with connection_closed.
      closing(stats_.closed_broken, &metrics::pool_counters::closed_broken);
      close = true;
    } else if (e.client->pending_calls() != 0) {
      return false;
    } else if (config_.idle_timeout.count() > 0 && now - e.last_used >= config_.idle_timeout) {
      closing(stats_.closed_idle, &metrics::pool_counters::closed_idle);
      close = true;
    } else if (config_.max_connection_age.count() > 0 &&
               now - e.created >= config_.max_connection_age) {
      closing(stats_.closed_aged, &metrics::pool_counters::closed_aged);
      close = true;
    }
    if (!close) return false;
    // A snapshot may still name it: it closes when the last snapshot that does goes (the one
    // publish_locked() replaces next). A caller that picked it from that snapshot keeps it open
    // with its lease until its call ends.
    closed_.emplace_back(generation_ + 1, std::move(p));
    return true;
  });
  if (entries_.size() != before) publish_locked();
}

std::shared_ptr<client_pool> client_pool::owner_of(const rpc_client& client) noexcept {
  return client.pool_.lock();
}

void client_pool::count_retry() {
  std::lock_guard lk(mutex_);
  ++stats_.retried_unsent;
  if (metrics_ != nullptr) metrics::pool_counters::add(metrics_->retries);
}

void client_pool::wake(std::vector<waiter>& waiters) {
  for (waiter& w : waiters) {
    if (w.deadline) {
      if (w.deadline->resumed.exchange(true, std::memory_order_acq_rel)) continue;  // timed out
      // The timer is used on its reactor only; its handler then finds the waiter resumed.
      asio::post(w.deadline->timer.get_executor(), [d = w.deadline] { d->timer.cancel(); });
    }
    if (w.reactor == no_reactor) {
      // From another thread: here, on the new connection's reactor, where it is local.
      detail::resume_traced(w.handle, w.trace);
    } else {
      // Home, where the caller's calls stay.
      asio::post(*reactors_[w.reactor],
                 [h = w.handle, t = std::move(w.trace)] { detail::resume_traced(h, t); });
    }
  }
  waiters.clear();
}

client_pool::time_point client_pool::deadline_for(
    std::chrono::milliseconds timeout) const noexcept {
  if (timeout.count() < 0) timeout = config_.client.request_timeout;
  if (timeout.count() <= 0) return no_deadline;
  return steady::now() + timeout;
}

std::chrono::milliseconds client_pool::left_of(time_point deadline) noexcept {
  if (deadline == no_deadline) return std::chrono::milliseconds(-1);
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
  return std::max(left, std::chrono::milliseconds(1));
}

bool client_pool::pick(lease& out) noexcept {
  const std::size_t here = caller_reactor();
  if (here == no_reactor) return false;
  const snapshot& s = *published_.load(std::memory_order_acquire);
  const snapshot::conn* b = s.conns.data() + s.begins[here];
  const snapshot::conn* e = s.conns.data() + s.begins[here + 1];
  if (b == e) return false;  // none here: make one here, or hand off
  const bool aging = config_.max_connection_age.count() > 0;
  const steady::time_point now = aging ? steady::now() : steady::time_point{};
  // One connection here and no room for another: no count to compare.
  const bool counting = s.room || e - b > 1;
  const snapshot::conn* best = nullptr;
  std::size_t best_pending = 0;
  for (const snapshot::conn* c = b; c != e; ++c) {
    if (aging && now - c->created >= config_.max_connection_age) continue;  // retiring
    const std::size_t pending = counting ? c->link->pending_calls() : 0;
    if (best == nullptr || pending < best_pending) {
      best = c;
      best_pending = pending;
    }
  }
  // A broken one (its calls ended, so it looks idle): the slow path reaps it and publishes.
  if (best == nullptr || !best->link->is_open()) return false;
  // The server stated its reactors (after connect: its pong) since the snapshot was made: the
  // slow path takes the count (the cap and the spread follow it) and publishes.
  if (const std::size_t r = best->link->server_reactors(); r != 0 && r != s.server_reactors)
    return false;
  if (s.room) {
    const bool spread = config_.spread_in_flight != 0 && s.live < s.spread_below &&
                        best_pending >= config_.spread_in_flight;
    const bool full = best_pending >= config_.max_in_flight_per_connection;
    if ((spread || full) && steady::now() >= s.next_attempt) return false;  // grow here
  }
  auto& uses = best->e->uses;
  uses.store(uses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  out.client = best->e->client;
  out.hint = client_reuse_hint::reused;
  return true;
}

client_pool::acquiring client_pool::acquire() {
  acquiring a;
  if (!pick(a.picked_)) a.slow_ = acquire_slow();
  return a;
}

task<expected<client_pool::lease, rpc_error>> client_pool::acquire_slow(time_point deadline) {
  auto keep_alive = shared_from_this();   // the pool outlives every suspended acquire
  std::shared_ptr<connect_attempt> mine;  // the connect this caller started, until it ends
  for (;;) {
    std::shared_ptr<connect_attempt> started;
    const std::size_t here = caller_reactor();
    {
      std::unique_lock lk(mutex_);
      if (mine && mine->done) {
        const auto a = std::exchange(mine, nullptr);
        // The caller that asked for the connection gets it (first_use, unless one was quicker).
        const auto it = std::find_if(entries_.begin(), entries_.end(),
                                     [&](const auto& e) { return e->client == a->client; });
        if (!a->ec && it != entries_.end()) {
          entry& e = **it;
          const bool first = !e.used;
          e.used = true;
          ++e.uses;
          co_return lease{a->client,
                          first ? client_reuse_hint::first_use : client_reuse_hint::reused};
        }
        // Its connect failed: that error, unless another connection is usable or coming.
        const bool other_usable = std::any_of(entries_.begin(), entries_.end(), [](const auto& e) {
          return !e->connecting && e->client->is_connected();
        });
        if (a->ec && !other_usable && connecting_ == 0) co_return unexpected(a->ec);
      }
      const auto now = steady::now();
      reap_locked(now);
      // The least busy usable connection on the caller's reactor, and anywhere.
      entry* local = nullptr;
      entry* any = nullptr;
      std::size_t local_pending = 0, any_pending = 0;
      std::size_t live = 0;
      bool stated = false, broken_listed = false;
      for (auto& p : entries_) {
        entry& e = *p;
        if (e.connecting || e.client->is_connected()) ++live;
        if (e.connecting) continue;
        if (!e.client->is_connected()) {
          broken_listed =
              broken_listed || std::any_of(current_->conns.begin(), current_->conns.end(),
                                           [&](const auto& c) { return c.e == &e; });
          continue;
        }
        if (config_.max_connection_age.count() > 0 && now - e.created >= config_.max_connection_age)
          continue;  // retiring: no new calls
        if (const std::size_t r = e.client->server_reactors(); r != 0 && r != server_reactors_) {
          server_reactors_ = r;
          stated = true;
        }
        const std::size_t pending = e.client->pending_calls();
        if (any == nullptr || pending < any_pending) {
          any = &e;
          any_pending = pending;
        }
        if (e.reactor == here && (local == nullptr || pending < local_pending)) {
          local = &e;
          local_pending = pending;
        }
      }
      // The cap and the spread follow the server's count; a broken connection leaves the
      // snapshot even while a lease keeps it.
      if (stated || broken_listed) publish_locked();
      // Broken connections a caller still holds a lease on are not counted: they take no
      // calls and go away with the lease, and the calls retrying off them need a fresh one.
      const std::size_t cap = max_connections_locked();
      const bool room = live < cap;
      const bool may_connect = room && now >= next_attempt_;
      // The caller's own reactor's pick when it has one; else the least busy anywhere.
      entry* best = local != nullptr ? local : any;
      const std::size_t best_pending = local != nullptr ? local_pending : any_pending;
      // A caller on a reactor with no usable connection makes one there while there is room
      // once the pick elsewhere is busy (spread_in_flight calls in flight, or with spreading
      // off max_in_flight_per_connection; a light load keeps to few connections), unless one
      // is already being made there (it waits for that one). Else it is handed the pick.
      const bool none_here = here != no_reactor && local == nullptr;
      const bool connecting_here =
          here != no_reactor && std::any_of(entries_.begin(), entries_.end(), [&](const auto& e) {
            return e->connecting && e->reactor == here;
          });
      // Another connection when the pick is full, or when the server has reactors without a
      // connection of ours and the pick already has calls in flight.
      const bool spread = config_.spread_in_flight != 0 && live < std::min(server_reactors_, cap) &&
                          best_pending >= config_.spread_in_flight;
      const bool full = best_pending >= config_.max_in_flight_per_connection;
      const std::size_t busy = config_.spread_in_flight != 0 ? config_.spread_in_flight
                                                             : config_.max_in_flight_per_connection;
      const bool grow = may_connect && (best == nullptr || full || spread ||
                                        (none_here && !connecting_here && best_pending >= busy));
      if (best != nullptr && !grow && !(none_here && connecting_here)) {
        ++best->uses;
        best->last_used = now;
        lease l{best->client,
                best->used ? client_reuse_hint::reused : client_reuse_hint::first_use};
        best->used = true;
        lk.unlock();
        if (best->reactor != here) count_cross(here);
        co_return l;
      }
      // With no connection up yet and one being made, wait for that one: a second connect
      // for the same first calls would only leave an extra connection behind.
      if (grow && (best != nullptr || connecting_ == 0)) {
        // On the caller's reactor, so its calls stay there; a caller from another thread
        // places it on the reactor with the fewest connections.
        started =
            begin_connect_locked(here != no_reactor ? here : least_used_reactor_locked(), now);
        mine = started;
      } else if (connecting_ == 0) {
        co_return unexpected(rpc_error(rpc_errc::connect_failed,
                                       "no connection to " + endpoint_ +
                                           ": waiting to retry after " +
                                           std::to_string(consecutive_failures_) +
                                           " failed connect(s); last error: " + last_error_));
      }
    }
    if (started) run_connect(weak_from_this(), endpoint_, std::move(started));
    if (deadline != no_deadline && steady::now() >= deadline) {
      co_return unexpected(rpc_error(rpc_errc::timeout, "the call's deadline passed while " +
                                                            endpoint_ + " was being connected"));
    }
    co_await connect_wait{this, deadline};  // this caller's connect, or another's
  }
}

std::shared_ptr<client_pool::connect_attempt> client_pool::begin_connect_locked(std::size_t reactor,
                                                                                time_point now) {
  client_config cc = config_.client;
  cc.connect_timeout = config_.connect_timeout;
  // The server's reactor count, for the auto cap and spreading.
  if (config_.max_connections == 0 || config_.spread_in_flight != 0) cc.ask_server_reactors = true;
  auto a = std::make_shared<connect_attempt>();
  a->client.reset(new rpc_client(cc, reactor));
  a->client->pool_ = weak_from_this();
  auto e = std::make_unique<entry>();
  e->client = a->client;
  e->reactor = reactor;
  e->created = e->last_used = now;
  entries_.push_back(std::move(e));
  ++connecting_;
  ++stats_.connect_attempts;
  publish_locked();  // counts it as live: other callers do not open one for it too
  return a;
}

detail::detached client_pool::run_connect(std::weak_ptr<client_pool> weak, std::string endpoint,
                                          std::shared_ptr<connect_attempt> a) {
  const detail::background_work counted;
  rpc_error ec;
  try {
    ec = co_await a->client->connect(endpoint);
  } catch (...) {
    ec = rpc_error(rpc_errc::connect_failed, "out of memory while connecting");
  }
  // Gone: nobody waits (a waiter keeps the pool), and its destructor closed this connection.
  const auto pool = weak.lock();
  if (!pool) co_return;
  std::vector<waiter> waiters;
  {
    std::lock_guard lk(pool->mutex_);
    --pool->connecting_;
    auto it = std::find_if(pool->entries_.begin(), pool->entries_.end(),
                           [&](const auto& e) { return e->client == a->client; });
    if (ec) {
      pool->entries_.erase(it);
      ++pool->consecutive_failures_;
      ++pool->stats_.connect_failures;
      if (pool->metrics_ != nullptr) metrics::pool_counters::add(pool->metrics_->connects_failed);
      pool->last_error_ = ec.message();
      pool->next_attempt_ = steady::now() + pool->backoff_locked();
    } else {
      (*it)->connecting = false;
      (*it)->last_used = steady::now();
      if (pool->metrics_ != nullptr) {
        metrics::pool_counters::add(pool->metrics_->connects_ok);
        pool->metrics_->connections.fetch_add(1, std::memory_order_relaxed);
      }
      pool->consecutive_failures_ = 0;
      if (const std::size_t r = a->client->server_reactors(); r != 0) pool->server_reactors_ = r;
    }
    a->done = true;
    a->ec = std::move(ec);
    pool->publish_locked();
    waiters.swap(pool->waiters_);
  }
  pool->wake(waiters);
}

}  // namespace corvid
