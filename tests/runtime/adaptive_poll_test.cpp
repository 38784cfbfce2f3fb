// Adaptive polling: the budget a reactor learns (grows while its events come back soon after
// it went idle, shrinks to zero when they stop), and what a reactor does with it: in a
// ping-pong with another reactor it polls instead of sleeping, and once traffic stops it
// sleeps. io_pool::polling_sleeps counts the sleeps (a thread's voluntary context switches
// would also count waits for asio's scheduler lock, which the other reactor takes to post);
// CPU time tells a sleeping reactor from a spinning one. Nothing here measures speed.
#include "runtime/adaptive_poll.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <pthread.h>
#include <sched.h>
#include <semaphore>
#include <thread>
#include <vector>

#include <asio/post.hpp>
#include <gtest/gtest.h>

#include "corvid/runtime/cpu_budget.hpp"
#include "corvid/runtime/io_pool.hpp"
#include "corvid/server/server_config.hpp"

#include "eventually.hpp"
#include "runtime/partial_frame_hint.hpp"
#include "slowdown.hpp"

namespace corvid {
namespace {

using namespace std::chrono_literals;
using detail::adaptive_poll;

TEST(AdaptivePoll, QuickWakeUpsGrowTheBudgetUpToTheMaximum) {
  adaptive_poll p(80us);
  EXPECT_EQ(p.budget(), 0ns) << "a reactor starts by sleeping";
  p.slept(30us);
  EXPECT_EQ(p.budget(), 10us) << "an event within the maximum: start polling (max / 8)";
  p.slept(30us);
  EXPECT_EQ(p.budget(), 20us);
  p.slept(80us);
  EXPECT_EQ(p.budget(), 40us) << "exactly the maximum still counts as catchable";
  p.slept(1us);
  EXPECT_EQ(p.budget(), 80us);
  p.slept(1us);
  EXPECT_EQ(p.budget(), 80us) << "never past the maximum";
}

TEST(AdaptivePoll, LongWaitsShrinkTheBudgetToZero) {
  adaptive_poll p(80us);
  for (int i = 0; i < 5; ++i) p.slept(1us);
  ASSERT_EQ(p.budget(), 80us);
  p.slept(5ms);
  EXPECT_EQ(p.budget(), 40us) << "one late event halves it";
  p.slept(5ms);
  p.slept(5ms);
  EXPECT_EQ(p.budget(), 10us);
  p.slept(5ms);
  EXPECT_EQ(p.budget(), 0ns) << "below half the starting budget it stops polling";
  p.slept(5ms);
  EXPECT_EQ(p.budget(), 0ns);
}

TEST(AdaptivePoll, ZeroMaximumNeverPolls) {
  adaptive_poll p(0ns);
  for (int i = 0; i < 3; ++i) {
    p.slept(0ns);
    EXPECT_EQ(p.budget(), 0ns);
  }
}

TEST(AdaptivePoll, APreemptedPollHoldsPollingOffForLongerEachTime) {
  adaptive_poll p(80us);
  for (int i = 0; i < 5; ++i) p.slept(1us);
  const adaptive_poll::time_point t0{};
  ASSERT_EQ(p.budget(t0), 80us);
  p.preempted(t0);
  EXPECT_EQ(p.budget(t0), 0ns) << "lost its CPU while polling: sleep instead";
  EXPECT_EQ(p.budget(t0 + adaptive_poll::min_hold - 1ns), 0ns);
  EXPECT_EQ(p.budget(t0 + adaptive_poll::min_hold), 80us) << "the hold ends; the budget is kept";
  const auto t1 = t0 + 10ms;
  p.preempted(t1);
  EXPECT_EQ(p.budget(t1 + 2 * adaptive_poll::min_hold - 1ns), 0ns)
      << "preempted again: twice as long";
  EXPECT_EQ(p.budget(t1 + 2 * adaptive_poll::min_hold), 80us);
  for (int i = 0; i < 20; ++i) p.preempted(t1);
  EXPECT_EQ(p.budget(t1 + adaptive_poll::max_hold - 1ns), 0ns);
  EXPECT_EQ(p.budget(t1 + adaptive_poll::max_hold), 80us) << "never held past the maximum";
}

TEST(AdaptivePoll, ACaughtEventShortensTheHold) {
  adaptive_poll p(80us);
  for (int i = 0; i < 5; ++i) p.slept(1us);
  const adaptive_poll::time_point t0{};
  for (int i = 0; i < 3; ++i) p.preempted(t0);  // a hold of 4 ms
  p.caught();                                   // 2 ms
  p.caught();                                   // 1 ms
  p.preempted(t0);                              // doubles what is left: 2 ms
  EXPECT_EQ(p.budget(t0 + 2ms - 1ns), 0ns);
  EXPECT_EQ(p.budget(t0 + 2ms), 80us);
  for (int i = 0; i < 3; ++i) p.caught();
  p.preempted(t0);
  EXPECT_EQ(p.budget(t0 + adaptive_poll::min_hold), 80us)
      << "polling paid again: back to the shortest hold";
}

TEST(AdaptivePoll, PollsThatKeepMissingHoldPollingOff) {
  adaptive_poll p(80us);
  for (int i = 0; i < 5; ++i) p.slept(1us);
  const adaptive_poll::time_point t0{};
  for (int i = 0; i < adaptive_poll::max_misses - 1; ++i) p.missed(t0);
  p.caught();  // one catch: the misses were not in a row
  for (int i = 0; i < adaptive_poll::max_misses - 1; ++i) p.missed(t0);
  EXPECT_EQ(p.budget(t0), 80us);
  p.missed(t0);
  EXPECT_EQ(p.budget(t0), 0ns) << adaptive_poll::max_misses << " misses in a row: stop polling";
  EXPECT_EQ(p.budget(t0 + adaptive_poll::min_hold), 80us);
}

TEST(AdaptivePoll, OnByDefaultForServersAndPools) {
  // The full budget unless a cgroup quota gives each default reactor less than a CPU
  // (cpu_budget_test covers that rule).
  EXPECT_EQ(server_config{}.adaptive_poll, usable_cpus().adaptive_poll());
  EXPECT_GT(io_pool::default_adaptive_poll, 0us);
}

// Two one-reactor pools bounce a handler `rounds` times (running `on_a` on each visit to a);
// returns how many times reactor `a` slept meanwhile, and reactor `b` in `b_slept`.
std::uint64_t sleeps_in_ping_pong(io_pool& a, io_pool& b, int rounds,
                                  std::uint64_t* b_slept = nullptr,
                                  std::function<void()> on_a = {}) {
  struct bounce {
    io_pool& a;
    io_pool& b;
    int left;
    std::function<void()> on_a;
    std::promise<void> done;
    void to_a() {
      asio::post(a.at(0), [this] {
        if (on_a) on_a();
        if (--left == 0) {
          done.set_value();
          return;
        }
        to_b();
      });
    }
    void to_b() {
      asio::post(b.at(0), [this] { to_a(); });
    }
  };
  bounce game{a, b, rounds, std::move(on_a), {}};
  const std::uint64_t a_before = a.polling_sleeps(0);
  const std::uint64_t b_before = b.polling_sleeps(0);
  game.to_b();
  game.done.get_future().get();
  if (b_slept != nullptr) *b_slept = b.polling_sleeps(0) - b_before;
  return a.polling_sleeps(0) - a_before;
}

// A maximum far above any hop's time, even under a sanitizer on a loaded machine: the test is
// about the mechanism, not about where the threshold sits.
constexpr auto generous = 20ms;

// The CPUs this process may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  return cpus;
}

// A reactor start hook pinning its thread to `cpu`.
io_pool::thread_start_hook pin_to(int cpu) {
  return [cpu](std::size_t) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
  };
}

TEST(AdaptivePoll, AReactorInAPingPongPollsInsteadOfSleeping) {
  const auto cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs: a poller waits for a peer elsewhere";
  io_pool a(1, pin_to(cpus[0]), 0ns, generous);
  io_pool b(1, pin_to(cpus[1]), 0ns, generous);
  constexpr int rounds = 2000;
  sleeps_in_ping_pong(a, b, 50);  // warm up: both learn their budget
  const std::uint64_t held_before = a.polling_held_sleeps(0);
  const std::uint64_t slept = sleeps_in_ping_pong(a, b, rounds);
  // On a loaded machine a's polls lose the CPU at times, and it rightly sleeps for a while
  // after each (the next test): those sleeps are not polling failing to catch events.
  const std::uint64_t held = a.polling_held_sleeps(0) - held_before;
  EXPECT_LT(slept - held, static_cast<std::uint64_t>(rounds / 4))
      << "a reactor whose events come back within its budget must "
         "poll for them, not sleep for each one";
}

TEST(AdaptivePoll, AReactorThatLosesItsCpuWhilePollingStopsPolling) {
  // A thread spinning on a's CPU competes with it: the scheduler takes the CPU from a while it
  // polls, so a stops polling for a while (and sleeps, keeping the scheduler's preference for
  // a woken sleeper) instead of spinning through turns it loses.
  const auto cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  std::atomic<bool> stop{false};
  std::thread hog([&] {
    pin_to(cpus[0])(0);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  io_pool a(1, pin_to(cpus[0]), 0ns, generous);
  io_pool b(1, pin_to(cpus.back()), 0ns, generous);
  const bool seen = test::eventually(
      [&] {
        sleeps_in_ping_pong(a, b, 200);
        return a.polling_holds(0) > 0 && a.polling_held_sleeps(0) > 0;
      },
      test::patience(20s));
  stop = true;
  hog.join();
  EXPECT_TRUE(seen) << "preemptions: " << a.polling_holds(0)
                    << ", held sleeps: " << a.polling_held_sleeps(0);
}

TEST(AdaptivePoll, AReactorWhosePeerRunsOnItsCpuStopsPolling) {
  // a's events come from a plain thread on a's CPU (another process's reactor, say, put there
  // by the scheduler): it can run only once a stops polling, so a's polls keep missing, and a
  // stops polling for a while instead of delaying every event by its budget.
  const auto cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  io_pool a(1, pin_to(cpus[0]), 0ns, generous);
  std::binary_semaphore ask{0};
  std::atomic<int> answered{0};
  std::atomic<bool> stop{false};
  std::thread peer([&] {
    pin_to(cpus[0])(0);
    while (true) {
      ask.acquire();
      if (stop.load()) return;
      asio::post(a.at(0), [&] { answered.fetch_add(1); });
    }
  });
  const bool seen = test::eventually(
      [&] {
        for (int i = 0; i < 200; ++i) {
          const int want = answered.load() + 1;
          asio::post(a.at(0), [&] { ask.release(); });
          while (answered.load() < want) std::this_thread::yield();
        }
        return a.polling_holds(0) > 0 && a.polling_held_sleeps(0) > 0;
      },
      test::patience(20s));
  stop = true;
  ask.release();
  peer.join();
  EXPECT_TRUE(seen) << "holds: " << a.polling_holds(0)
                    << ", held sleeps: " << a.polling_held_sleeps(0);
}

TEST(AdaptivePoll, OffMeansNoPollingLoop) {
  io_pool a(1, {}, 0ns, 0ns);
  io_pool b(1, {}, 0ns, 0ns);
  EXPECT_EQ(sleeps_in_ping_pong(a, b, 100), 0u) << "plain run(): nothing counted";
}

TEST(AdaptivePoll, AfterABatchEndingMidFrameTheReactorSleepsForTheRest) {
  // Each of a's events "ends mid-frame" (what frame_stream notes when a read stops inside a
  // frame): a sleeps for the next one instead of polling, so big frames arriving in pieces
  // are read in fewer, larger reads.
  const auto cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs: a poller waits for a peer elsewhere";
  io_pool a(1, pin_to(cpus[0]), 0ns, generous);
  io_pool b(1, pin_to(cpus[1]), 0ns, generous);
  sleeps_in_ping_pong(a, b, 50);  // both poll by now
  constexpr int rounds = 1000;
  const std::uint64_t slept =
      sleeps_in_ping_pong(a, b, rounds, nullptr, [] { detail::note_partial_frame(); });
  EXPECT_GT(slept, static_cast<std::uint64_t>(rounds / 2));
}

TEST(AdaptivePoll, TwoReactorsOnOneCpuSleepInsteadOfPollingForEachOther) {
  // Polling for an event only the other reactor on this CPU can produce would keep that one
  // off the CPU: a reactor that sees another poller on its CPU sleeps instead.
  const auto cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  io_pool a(1, pin_to(cpus[0]), 0ns, generous);
  io_pool b(1, pin_to(cpus[0]), 0ns, generous);
  constexpr int rounds = 300;
  sleeps_in_ping_pong(a, b, 50);
  std::uint64_t b_slept = 0;
  const std::uint64_t a_slept = sleeps_in_ping_pong(a, b, rounds, &b_slept);
  EXPECT_GT(a_slept + b_slept, static_cast<std::uint64_t>(rounds / 2));
}

TEST(AdaptivePoll, AReactorSleepsOnceTheTrafficStops) {
  io_pool a(1, {}, 0ns, generous);
  io_pool b(1, {}, 0ns, generous);
  sleeps_in_ping_pong(a, b, 500);  // `a` has learned to poll
  // After one more handler, with nothing left to do, `a` polls for at most its maximum
  // (20 ms), then sleeps; polling on would never add a sleep.
  const auto before = a.polling_sleeps(0);
  std::promise<void> ran;
  asio::post(a.at(0), [&] { ran.set_value(); });
  ran.get_future().get();
  EXPECT_TRUE(test::eventually([&] { return a.polling_sleeps(0) > before; }, 10s))
      << "the reactor kept polling with nothing to do";
}

}  // namespace
}  // namespace corvid
