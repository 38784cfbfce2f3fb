#pragma once
// The loop a reactor thread runs: asio's run(), or with a busy-poll budget, spinning on
// poll() (a non-blocking epoll_wait or io_uring peek plus the ready handlers) until nothing has
// happened for the budget, then sleeping in run_one() until the next event. Spinning removes
// the kernel's wake-up from the path of a reply that arrives within the budget. Without a
// budget, by default, a reactor polls for a short budget it learns (adaptive_poll.hpp).
#include <atomic>
#include <chrono>
#include <cstdint>

#include "corvid/detail/polling_counters.hpp"

#include "asio_all.hpp"

namespace corvid::detail {

// Runs `ctx` until it is stopped. `budget_ns` is read on every pass: 0 = no fixed spin;
// raising it from 0 needs ctx.stop() to take the thread out of run(), lowering it to 0 takes
// effect when the spinning loop next looks. Without a fixed budget, `adaptive_max` > 0 polls
// for up to a learned budget before each sleep (adaptive_poll.hpp); 0 = plain run(). The
// sleeps after spinning or polling, and polling's holds, are counted in `counters`.
// Returns when ctx is stopped (the caller restarts it and calls again unless the pool is
// stopping).
void run_reactor(asio::io_context& ctx, const std::atomic<std::int64_t>& budget_ns,
                 std::chrono::nanoseconds adaptive_max, polling_counters& counters);

}  // namespace corvid::detail
