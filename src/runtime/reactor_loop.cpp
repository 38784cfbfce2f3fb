#include "reactor_loop.hpp"

#include <chrono>
#include <thread>

#include "spinners.hpp"

namespace corvid::detail {
namespace {

// How long a spinning reactor with nothing to do spins before it yields to another spinner
// on its core: longer than a loopback round trip's server side, so an answer due soon is
// not delayed.
constexpr std::chrono::microseconds yield_after{50};

// Spins while `budget_ns` > 0; returns when ctx is stopped or busy-poll was switched off.
void spin(asio::io_context& ctx, const std::atomic<std::int64_t>& budget_ns) {
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
    if (ctx.run_one() == 0) return;
    last_work = clock::now();
  }
}

}  // namespace

void run_reactor(asio::io_context& ctx, const std::atomic<std::int64_t>& budget_ns) {
  if (budget_ns.load(std::memory_order_relaxed) > 0) {
    spin(ctx, budget_ns);
    if (ctx.stopped() || budget_ns.load(std::memory_order_relaxed) > 0) return;
  }
  ctx.run();
}

}  // namespace corvid::detail
