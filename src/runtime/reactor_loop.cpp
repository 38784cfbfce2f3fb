#include "reactor_loop.hpp"

#include <chrono>
#include <thread>
#include <time.h>
#include <utility>

#include "adaptive_poll.hpp"
#include "partial_frame_hint.hpp"
#include "spinners.hpp"

namespace corvid::detail {
namespace {

// How long a spinning reactor with nothing to do spins before it yields to another spinner
// on its core: longer than a loopback round trip's server side, so an answer due soon is
// not delayed.
constexpr std::chrono::microseconds yield_after{50};

// Spins while `budget_ns` > 0; returns when ctx is stopped or busy-poll was switched off.
void spin(asio::io_context& ctx, const std::atomic<std::int64_t>& budget_ns,
          polling_counters& counters) {
  using clock = std::chrono::steady_clock;
  spinner_slot me;
  auto last_work = clock::now();
  while (!ctx.stopped()) {
    const std::int64_t budget = budget_ns.load(std::memory_order_relaxed);
    if (budget <= 0) return;
    if (ctx.poll() > 0) {
      last_work = clock::now();
      continue;
    }
    const auto idle = clock::now() - last_work;
    if (idle < std::chrono::nanoseconds(budget)) {
      // Idle for a while, and another spinning reactor on this core: it may be the peer
      // this one waits for, let it run (spinners.hpp says why only then).
      if (idle > yield_after && me.shares_core()) std::this_thread::yield();
      continue;
    }
    // Idle for the whole budget: sleep in the kernel until one handler has run, then spin
    // again, since a handler that ran usually means more traffic is coming.
    me.pause();
    polling_counters::bump(counters.sleeps);
    if (ctx.run_one() == 0) return;
    last_work = clock::now();
  }
}

// CPU time of this thread: what the handlers run after a wake-up cost, to tell the time a
// reactor waited for an event from the time it then spent working.
std::chrono::nanoseconds thread_cpu() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// Runs ctx with an adaptive_poll budget of at most `max`; returns when ctx is stopped or
// busy-poll was switched on (the fixed budget takes over).
void run_adaptive(asio::io_context& ctx, const std::atomic<std::int64_t>& budget_ns,
                  std::chrono::nanoseconds max, polling_counters& counters) {
  using clock = std::chrono::steady_clock;
  adaptive_poll policy(max);
  spinner_slot me;
  bool streaming = false;  // the last batch ended mid-frame: sleep for the rest
  while (!ctx.stopped() && budget_ns.load(std::memory_order_relaxed) <= 0) {
    const auto idle_from = clock::now();
    const auto budget = streaming ? std::chrono::nanoseconds::zero() : policy.budget(idle_from);
    bool found = false;
    auto last = idle_from;
    while (budget.count() > 0 && !ctx.stopped()) {
      if (ctx.poll() > 0) {
        found = true;
        break;
      }
      const auto now = clock::now();
      if (now - last > adaptive_poll::lost_cpu_gap) {  // off the CPU between two empty polls
        policy.preempted(now);
        polling_counters::bump(counters.holds);
        break;
      }
      last = now;
      // Another polling reactor on this CPU may be the one this one waits for: sleep, so
      // the scheduler runs it (unlike a fixed budget's spinner, a learned one only polls when
      // it has the CPU to itself).
      if (now - idle_from >= budget || me.shares_core()) break;
    }
    if (found) {
      policy.caught();
    } else if (budget.count() > 0 && !policy.held(last)) {
      policy.missed(last);
      if (policy.held(last)) polling_counters::bump(counters.holds);
    }
    std::chrono::nanoseconds cpu_before{};
    if (!found) {
      me.pause();
      polling_counters::bump(counters.sleeps);
      if (!streaming && policy.held(last)) polling_counters::bump(counters.held_sleeps);
      cpu_before = thread_cpu();
      if (ctx.run_one() == 0) return;
    }
    while (ctx.poll() > 0) {  // the rest of what is ready
    }
    // An event caught while polling says the budget is right; a wait for the rest of a frame
    // says nothing about how soon the next batch comes. Otherwise the wait, work excluded.
    if (!found && !streaming) {
      const auto worked = thread_cpu() - cpu_before;
      policy.slept(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - idle_from) -
                   worked);
    }
    streaming = std::exchange(partial_frame_seen, false);
  }
}

}  // namespace

void run_reactor(asio::io_context& ctx, const std::atomic<std::int64_t>& budget_ns,
                 std::chrono::nanoseconds adaptive_max, polling_counters& counters) {
  if (budget_ns.load(std::memory_order_relaxed) > 0) {
    spin(ctx, budget_ns, counters);
    if (ctx.stopped() || budget_ns.load(std::memory_order_relaxed) > 0) return;
  }
  if (adaptive_max.count() > 0) {
    run_adaptive(ctx, budget_ns, adaptive_max, counters);
    return;  // stopped, or busy-poll switched on: the pool restarts the loop
  }
  ctx.run();
}

}  // namespace corvid::detail
