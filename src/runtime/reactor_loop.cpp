#include "reactor_loop.hpp"

#include <chrono>
#include <thread>

namespace corvid::detail {
namespace {

// Spins while `budget_ns` > 0; returns when ctx is stopped or busy-poll was switched off.
void spin(asio::io_context& ctx, const std::atomic<std::int64_t>& budget_ns) {
  using clock = std::chrono::steady_clock;
  auto last_work = clock::now();
  while (!ctx.stopped()) {
    const std::int64_t budget = budget_ns.load(std::memory_order_relaxed);
    if (budget <= 0) return;
    if (ctx.poll() > 0) {
      last_work = clock::now();
      continue;
    }
    if (clock::now() - last_work < std::chrono::nanoseconds(budget)) {
      // Nothing ready: let another runnable thread of this core go first (the peer this
      // reactor waits for may be it); with the core to itself, this returns at once.
      std::this_thread::yield();
      continue;
    }
    // Idle for the whole budget: sleep in the kernel until one handler has run, then spin
    // again, since a handler that ran usually means more traffic is coming.
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
