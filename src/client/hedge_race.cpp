// hedge_race: the caller of a hedged call waits for the next copy's outcome or for the moment
// to send another copy, whichever comes first; the first of the two to happen wakes it.
#include "corvid/client/hedge_race.hpp"

#include <utility>

#include "corvid/runtime/io_pool.hpp"
#include "corvid/trace/trace_scope.hpp"

#include "../runtime/asio_all.hpp"

namespace corvid::detail {

bool hedge_race::waiting::await_suspend(std::coroutine_handle<> h) {
  std::uint64_t round = 0;
  std::shared_ptr<hedge_race> race;
  const auto delay = delay_;
  {
    std::lock_guard lk(race_.mutex);
    if (race_.unseen_ != 0) {  // a copy ended meanwhile: go on at once
      --race_.unseen_;
      race_.woken_by_ = event::copy_ended;
      return false;
    }
    race_.waiter_ = h;
    round = ++race_.round_;
    if (delay >= std::chrono::steady_clock::duration::zero()) race = race_.shared_from_this();
  }
  // From here the caller may already run on another thread, and this awaiter be gone: only
  // locals are used.
  if (race) {
    // A plain handler, not a coroutine: dropped unrun (its reactor stopping), it still lets
    // the race go.
    asio::io_context* ctx = current_reactor();
    if (ctx == nullptr) ctx = &io_pool::default_pool().next();
    auto timer = std::make_shared<asio::steady_timer>(*ctx, delay);
    timer->async_wait([timer, race = std::move(race), round](const std::error_code&) {
      race->delay_passed(round);
    });
  }
  return true;
}

void hedge_race::copy_ended() {
  std::coroutine_handle<> h;
  {
    std::lock_guard lk(mutex);
    if (waiter_) {
      h = std::exchange(waiter_, nullptr);
      woken_by_ = event::copy_ended;
    } else {
      ++unseen_;
    }
  }
  if (h) resume_traced(h, trace);
}

void hedge_race::delay_passed(std::uint64_t round) {
  std::coroutine_handle<> h;
  {
    std::lock_guard lk(mutex);
    if (!waiter_ || round != round_) return;  // woken by a copy already
    h = std::exchange(waiter_, nullptr);
    woken_by_ = event::delay_passed;
  }
  resume_traced(h, trace);
}

}  // namespace corvid::detail
