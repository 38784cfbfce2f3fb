#include <chrono>
#include <coroutine>
#include <list>
#include <mutex>

#include "corvid/protocol/health.hpp"
#include "corvid/server/request_context.hpp"

#include "../runtime/asio_all.hpp"

namespace corvid {

using steady = std::chrono::steady_clock;

// A watch between two items waits on a timer of its own (the 30 s repeat); set() cancels the
// timers of every watch waiting, so a change reaches them at once while an unchanging status
// costs each watch one timer every 30 s, not a poll.
struct health_service::waiters {
  struct waiter {
    explicit waiter(asio::io_context& ctx) : timer(ctx) {}
    asio::steady_timer timer;
    std::list<std::shared_ptr<waiter>>::iterator at;
    bool listed = false;  // under the mutex
  };
  std::mutex mutex;
  std::list<std::shared_ptr<waiter>> list;
  std::atomic<std::size_t> watching{0};

  // Resumes the watch once the status is no longer `seen`, after `limit`, or once its call
  // is cancelled (the client went away), on the connection's reactor.
  struct change_or_timeout {
    waiters& ws;
    const std::atomic<health_status>& status;
    health_status seen;
    steady::duration limit;
    request_context& ctx;
    bool await_ready() const noexcept { return ctx.cancelled(); }
    bool await_suspend(std::coroutine_handle<> h) {
      auto w = std::make_shared<waiter>(ctx.reactor());
      {
        // set() stores the status before it takes the lock: a change is either seen here or
        // wakes this waiter.
        std::lock_guard lk(ws.mutex);
        if (status.load(std::memory_order_relaxed) != seen) return false;
        w->at = ws.list.insert(ws.list.end(), w);
        w->listed = true;
      }
      // Armed on the reactor before set()'s cancel, posted there, can run.
      w->timer.expires_after(limit);
      w->timer.async_wait(asio::bind_cancellation_slot(
          ctx.cancellation_slot(), [h, w, &ws = ws, &ctx = ctx](const std::error_code&) {
            ctx.cancellation_slot().clear();
            {
              std::lock_guard lk(ws.mutex);
              if (w->listed) ws.list.erase(w->at);
              w->listed = false;
            }
            h.resume();
          }));
      return true;
    }
    void await_resume() const noexcept {}
  };
};

health_service::health_service() : waiters_(std::make_unique<waiters>()) {}
health_service::~health_service() = default;

std::size_t health_service::watchers() const noexcept {
  return waiters_->watching.load(std::memory_order_relaxed);
}

void health_service::set(health_status s) {
  health_status was = status_.load(std::memory_order_relaxed);
  do {
    if (was == s || was == health_status::draining) return;  // a stop is not undone
  } while (!status_.compare_exchange_weak(was, s, std::memory_order_relaxed));
  std::list<std::shared_ptr<waiters::waiter>> woken;
  {
    std::lock_guard lk(waiters_->mutex);
    for (auto& w : waiters_->list) w->listed = false;
    woken.swap(waiters_->list);
  }
  for (auto& w : woken) {
    asio::post(w->timer.get_executor(), [w] { w->timer.cancel(); });
  }
}

stream<health_status> health_service::watch(request_context& ctx) {
  using namespace std::chrono_literals;
  struct counted {
    std::atomic<std::size_t>& n;
    explicit counted(std::atomic<std::size_t>& c) : n(c) { ++n; }
    ~counted() { --n; }
  } count(waiters_->watching);
  health_status last = check();
  co_yield last;
  auto said = steady::now();
  while (last != health_status::draining) {
    co_await waiters::change_or_timeout{*waiters_, status_, last, said + 30s - steady::now(), ctx};
    if (ctx.cancelled()) co_return;  // nobody reads on
    const health_status now = check();
    if (now != last || steady::now() - said >= 30s) {
      last = now;
      said = steady::now();
      co_yield now;
    }
  }
}

}  // namespace corvid
