#include "health_follower.hpp"

#include <algorithm>
#include <coroutine>
#include <random>

#include "corvid/detail/detached.hpp"
#include "corvid/detail/switch_to.hpp"
#include "corvid/runtime/io_pool.hpp"

#include "../runtime/asio_all.hpp"
#include "background.hpp"

namespace corvid::detail {

using steady = std::chrono::steady_clock;

namespace {

void apply(endpoint_health& health, health_status s) {
  // Any status but serving (a newer server's too) keeps new calls away.
  const bool serving = s == health_status::serving;
  health.not_serving.store(!serving, std::memory_order_relaxed);
  if (serving) health.serving_again.store(true, std::memory_order_relaxed);
  health.watched.store(true, std::memory_order_relaxed);
}

}  // namespace

struct health_follower::pause {
  health_follower& f;
  steady::duration d;
  bool await_ready() {
    std::lock_guard lk(f.mutex_);
    f.pausing_ = !f.stopped_;
    return f.stopped_;
  }
  // On reactor_, so a cancel that stop() or retry_now() post there runs after the arming.
  void await_suspend(std::coroutine_handle<> h) {
    f.timer_.expires_after(d);
    f.timer_.async_wait([h](const std::error_code&) { h.resume(); });
  }
  // False once stopped.
  bool await_resume() {
    std::lock_guard lk(f.mutex_);
    f.pausing_ = false;
    return !f.stopped_;
  }
};

struct health_follower::run {
  static detached go(std::shared_ptr<health_follower> self, std::shared_ptr<client_pool> pool,
                     std::shared_ptr<endpoint_health> health, pool_config config) {
    const background_work counted;
    std::minstd_rand rng{std::random_device{}()};
    unsigned failures = 0;  // opens since the watch last said serving
    // Always through a post (post_to, not switch_to): a watch that stop() cancels resumes
    // inside that call, which must return (and unlock) before the follower touches anything.
    co_await post_to{self->reactor_};
    while (!self->stopped()) {
      bool aged = false;
      {
        const auto opened = steady::now();
        auto r = co_await pool->stream<&health_service::watch>();
        if (r && self->hold(&*r)) {
          while (auto s = co_await r->next()) {
            co_await post_to{self->reactor_};
            apply(*health, *s);
            if (*s == health_status::serving) failures = 0;
            // The watch holds its connection: one past max_connection_age moves, so the pool
            // can retire it (the server repeats the status at least every 30 s).
            if (config.max_connection_age.count() > 0 &&
                steady::now() - opened >= config.max_connection_age && !aged) {
              aged = self->cancel_held();
            }
          }
          co_await post_to{self->reactor_};
          health->watched.store(false, std::memory_order_relaxed);
          self->release();
          if (r->error() == rpc_errc::function_not_found) {
            // A server from before the health watch: nothing to follow; calls and probes
            // still judge it.
            health->not_serving.store(false, std::memory_order_relaxed);
            co_return;
          }
        }
      }
      if (aged) continue;
      co_await post_to{self->reactor_};  // the pause's timer is used on reactor_ only
      failures = std::min(failures + 1, 20u);
      const auto base =
          std::min(config.reconnect_backoff_initial * (std::int64_t{1} << (failures - 1)),
                   config.reconnect_backoff_max);
      const auto jittered = std::chrono::duration_cast<steady::duration>(
          base * std::uniform_real_distribution<double>(0.5, 1.5)(rng));
      if (!co_await pause{*self, jittered}) break;
    }
  }
};

std::shared_ptr<health_follower> health_follower::start(std::shared_ptr<client_pool> pool,
                                                        std::shared_ptr<endpoint_health> health,
                                                        const pool_config& config) {
  io_pool& reactors = config.client.pool ? *config.client.pool : io_pool::default_pool();
  auto self = std::make_shared<health_follower>(reactors.next());
  run::go(self, std::move(pool), std::move(health), config);
  return self;
}

bool health_follower::hold(reader* r) {
  std::lock_guard lk(mutex_);
  if (stopped_) return false;
  reader_ = r;
  return true;
}

void health_follower::release() {
  std::lock_guard lk(mutex_);
  reader_ = nullptr;
}

bool health_follower::cancel_held() {
  std::lock_guard lk(mutex_);
  // The follower itself, not waiting in next(): cancel() resumes nobody.
  if (stopped_ || reader_ == nullptr) return false;
  reader_->cancel();
  return true;
}

bool health_follower::stopped() const {
  std::lock_guard lk(mutex_);
  return stopped_;
}

void health_follower::stop() {
  std::lock_guard lk(mutex_);
  if (stopped_) return;
  stopped_ = true;
  // A follower waiting in next() resumes inside cancel() and at once posts itself on.
  if (reader_ != nullptr) reader_->cancel();
  if (pausing_) asio::post(reactor_, [self = shared_from_this()] { self->timer_.cancel(); });
}

void health_follower::retry_now() {
  std::lock_guard lk(mutex_);
  if (pausing_) asio::post(reactor_, [self = shared_from_this()] { self->timer_.cancel(); });
}

}  // namespace corvid::detail
