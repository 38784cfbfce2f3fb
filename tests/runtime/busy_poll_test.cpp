// io_pool's latency mode: a reactor with a busy-poll budget spins while traffic flows, sleeps
// once it has been idle for the budget, and keeps running handlers and timers either way.
// CPU time tells spinning from sleeping; the bounds are wide (a spinner on a loaded machine
// still gets a good share of a core, a sleeper gets next to none), and nothing here measures
// speed.
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
  // CPU the reactor uses over `wall` of wall time.
  std::chrono::nanoseconds cpu_over(std::chrono::milliseconds wall) {
    const auto before = cpu.used();
    std::this_thread::sleep_for(wall);
    return cpu.used() - before;
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
  p.touch();
  const auto used = p.cpu_over(300ms);
  EXPECT_LT(used, 100ms) << "a reactor idle for 300 ms with a 1 ms budget must sleep";
}

TEST(BusyPoll, ReactorSpinsWithinTheBudget) {
  measured_pool p(10s);
  p.touch();
  const auto used = p.cpu_over(300ms);
  EXPECT_GT(used, 30ms) << "a reactor inside its budget must spin, not sleep";
  p.touch();  // still serving handlers while spinning
}

TEST(BusyPoll, NoBudgetMeansTheReactorSleeps) {
  measured_pool p(0ns);
  p.touch();
  EXPECT_LT(p.cpu_over(300ms), 100ms);
}

TEST(BusyPoll, RaisingTheBudgetSwitchesARunningReactorToSpinning) {
  measured_pool p(0ns);
  p.touch();
  p.pool.raise_busy_poll(10s);
  p.touch();  // the reactor came out of run() and still serves handlers
  EXPECT_GT(p.cpu_over(300ms), 30ms);
}

TEST(BusyPoll, TimersFireOnASpinningReactor) {
  measured_pool p(10s);
  const auto start = std::chrono::steady_clock::now();
  sync_wait([](io_pool& pool) -> task<void> {
    co_await detail::switch_to(pool.at(0));
    co_await sleep_for(20ms);
  }(p.pool));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
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
