// io_pool's latency mode: a reactor with a busy-poll budget spins while traffic flows, sleeps
// once it has been idle for the budget, and keeps running handlers and timers either way.
// io_pool::polling_sleeps counts a reactor's sleeps; a spinner is told by the CPU time it
// keeps using (a sleeper uses none). Each waits for an event within a limit that only means
// "it hung"; nothing here measures speed.
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include <asio/post.hpp>
#include <gtest/gtest.h>

#include "corvid/detail/switch_to.hpp"
#include "corvid/runtime/io_pool.hpp"
#include "corvid/runtime/sleep.hpp"
#include "corvid/sync_wait.hpp"
#include "corvid/task.hpp"

#include "eventually.hpp"
#include "thread_cpu.hpp"

namespace corvid {
namespace {

using namespace std::chrono_literals;

// A one-reactor pool whose thread's CPU clock the test can read.
struct measured_pool {
  test::thread_cpu_clock cpu;
  io_pool pool;
  explicit measured_pool(std::chrono::nanoseconds budget)
      : pool(
            1, [this](std::size_t) { cpu.capture(); }, budget) {
    while (!cpu.ready()) std::this_thread::yield();
  }
  // Runs a handler on the reactor and waits for it: "work happened" for the spin loop.
  void touch() {
    std::promise<void> done;
    asio::post(pool.at(0), [&] { done.set_value(); });
    done.get_future().get();
  }
  // The reactor went to sleep in the kernel (again) after the handler touch() ran.
  bool sleeps_after_touch() {
    const auto before = pool.polling_sleeps(0);
    touch();
    return test::eventually([&] { return pool.polling_sleeps(0) > before; }, 10s);
  }
  // The reactor keeps using CPU with nothing to do: 50 ms of it, however long that takes a
  // spinner on a loaded machine; a sleeper never gets there.
  bool spins() {
    const auto before = cpu.used();
    return test::eventually([&] { return cpu.used() - before >= 50ms; }, 10s);
  }
};

TEST(BusyPoll, ConstructorSetsAndRaiseOnlyRaises) {
  io_pool off(1);
  EXPECT_EQ(off.busy_poll(), 0ns);
  io_pool on(1, {}, 250us);
  EXPECT_EQ(on.busy_poll(), 250us);
  on.raise_busy_poll(100us);
  EXPECT_EQ(on.busy_poll(), 250us) << "a smaller budget must not lower the pool's";
  on.raise_busy_poll(0us);
  EXPECT_EQ(on.busy_poll(), 250us);
  on.raise_busy_poll(1ms);
  EXPECT_EQ(on.busy_poll(), 1ms);
  io_pool negative(1, {}, -5us);
  EXPECT_EQ(negative.busy_poll(), 0ns) << "a negative budget means off";
}

TEST(BusyPoll, IdleReactorSleepsOnceTheBudgetIsSpent) {
  measured_pool p(1ms);
  EXPECT_TRUE(p.sleeps_after_touch()) << "a reactor idle past its 1 ms budget must sleep";
  EXPECT_TRUE(p.sleeps_after_touch()) << "and again after the next handler";
}

TEST(BusyPoll, ReactorSpinsWithinTheBudget) {
  measured_pool p(10s);
  p.touch();
  const auto slept = p.pool.polling_sleeps(0);
  EXPECT_TRUE(p.spins()) << "a reactor inside its budget must spin, not sleep";
  p.touch();  // still serving handlers while spinning
  EXPECT_EQ(p.pool.polling_sleeps(0), slept) << "it slept within its 10 s budget";
}

TEST(BusyPoll, NoBudgetMeansTheReactorSleeps) {
  measured_pool p(0ns);  // adaptive polling (on by default) at most, then a sleep
  EXPECT_TRUE(p.sleeps_after_touch());
  EXPECT_TRUE(p.sleeps_after_touch());
}

TEST(BusyPoll, RaisingTheBudgetSwitchesARunningReactorToSpinning) {
  measured_pool p(0ns);
  p.touch();
  p.pool.raise_busy_poll(10s);
  p.touch();  // the reactor came out of run() and still serves handlers
  const auto slept = p.pool.polling_sleeps(0);
  EXPECT_TRUE(p.spins());
  EXPECT_EQ(p.pool.polling_sleeps(0), slept) << "it slept within its 10 s budget";
}

TEST(BusyPoll, TimersFireOnASpinningReactor) {
  measured_pool p(10s);
  const auto start = std::chrono::steady_clock::now();
  sync_wait([](io_pool& pool) -> task<void> {
    co_await detail::switch_to(pool.at(0));
    co_await sleep_for(20ms);
  }(p.pool));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);  // a timer never fires early
}

TEST(BusyPoll, StopEndsASpinningReactor) {
  auto p = std::make_unique<measured_pool>(10s);
  p->touch();
  p->pool.stop();                // joins: returning at all is the test
  p->pool.raise_busy_poll(20s);  // after stop: harmless
  p.reset();
}

}  // namespace
}  // namespace corvid
