// io_pool (placement, thread identity, stop, resilience) and sleep_for on its reactors.
#include "corvid/runtime/io_pool.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

#include <asio/post.hpp>
#include <gtest/gtest.h>

#include "corvid/detail/switch_to.hpp"
#include "corvid/runtime/sleep.hpp"
#include "corvid/sync_wait.hpp"
#include "corvid/task.hpp"

namespace corvid {
namespace {

using namespace std::chrono_literals;

// Runs f on reactor ctx and returns its result to the calling thread.
template <class F>
auto run_on(asio::io_context& ctx, F f) {
  // The handler owns the promise: set_value may still be running when get() returns.
  auto p = std::make_shared<std::promise<decltype(f())>>();
  auto fut = p->get_future();
  asio::post(ctx, [p, &f] { p->set_value(f()); });
  return fut.get();
}

TEST(IoPool, SizeIsThreadCountAndAtLeastOne) {
  io_pool three(3);
  EXPECT_EQ(three.size(), 3u);
  io_pool zero(0);
  EXPECT_EQ(zero.size(), 1u);
}

TEST(IoPool, NextRoundRobinsOverEveryContext) {
  io_pool pool(3);
  std::set<asio::io_context*> seen;
  asio::io_context* first_round[3];
  for (auto*& c : first_round) {
    c = &pool.next();
    seen.insert(c);
  }
  EXPECT_EQ(seen, (std::set<asio::io_context*>{&pool.at(0), &pool.at(1), &pool.at(2)}));
  for (int round = 0; round < 3; ++round) {
    for (auto* c : first_round) EXPECT_EQ(&pool.next(), c) << "the cycle must repeat in order";
  }
}

TEST(IoPool, WorkPostedToAtRunsOnThatReactor) {
  io_pool pool(3);
  for (std::size_t i = 0; i < pool.size(); ++i) {
    asio::io_context* ctx = &pool.at(i);
    EXPECT_EQ(run_on(*ctx, [] { return current_reactor(); }), ctx) << i;
    EXPECT_TRUE(run_on(*ctx, [&] { return pool.owns_current_thread(); })) << i;
    EXPECT_NE(run_on(*ctx, [] { return std::this_thread::get_id(); }), std::this_thread::get_id());
  }
}

TEST(IoPool, OwnsCurrentThreadOnlyForItsOwnThreads) {
  io_pool a(1);
  io_pool b(1);
  EXPECT_FALSE(a.owns_current_thread());
  EXPECT_EQ(current_reactor(), nullptr);
  EXPECT_FALSE(run_on(b.at(0), [&] { return a.owns_current_thread(); }));
  EXPECT_TRUE(run_on(b.at(0), [&] { return b.owns_current_thread(); }));
}

// stop() must join: a handler already running when stop() is called has finished when it
// returns. A second (or concurrent) stop() must not return before that either.
TEST(IoPool, StopJoinsAndIsIdempotent) {
  io_pool pool(2);
  std::promise<void> started;
  std::atomic<bool> finished{false};
  asio::post(pool.at(1), [&] {
    started.set_value();
    std::this_thread::sleep_for(50ms);  // about time: still running when stop() is called
    finished = true;
  });
  started.get_future().wait();
  std::thread concurrent([&] { pool.stop(); });
  pool.stop();
  EXPECT_TRUE(finished);
  concurrent.join();
  EXPECT_TRUE(finished);
  pool.stop();  // and again after everything is down
}

TEST(IoPool, ThrowingHandlerDoesNotKillReactor) {
  io_pool pool(1);
  asio::post(pool.at(0), [] { throw std::runtime_error("handler bug (expected in test)"); });
  asio::post(pool.at(0), [] { throw 42; });  // not a std::exception either
  EXPECT_EQ(run_on(pool.at(0), [] { return current_reactor(); }), &pool.at(0))
      << "work posted after the throws must still run, on the same reactor";
}

TEST(IoPool, DefaultPoolIsOneSharedPool) {
  io_pool& p = io_pool::default_pool();
  EXPECT_GE(p.size(), 1u);
  EXPECT_EQ(&io_pool::default_pool(), &p);
  EXPECT_TRUE(run_on(p.next(), [&] { return p.owns_current_thread(); }));
}

TEST(SleepFor, SleepsAtLeastTheDurationOnReactor) {
  io_pool pool(2);
  auto body = [](io_pool& p) -> task<std::chrono::steady_clock::duration> {
    co_await detail::switch_to{p.at(1)};
    const auto t0 = std::chrono::steady_clock::now();
    co_await sleep_for(30ms);
    if (current_reactor() != &p.at(1)) throw std::runtime_error("woke on another reactor");
    co_return std::chrono::steady_clock::now() - t0;
  };
  EXPECT_GE(sync_wait(body(pool)), 30ms);  // no upper bound: CI machines stall
}

// Sleeping suspends the coroutine, not the thread: work queued on the same reactor before
// the sleep runs while it sleeps.
TEST(SleepFor, DoesNotBlockTheReactor) {
  io_pool pool(1);
  std::atomic<bool> other_ran{false};
  auto body = [](io_pool& p, std::atomic<bool>& flag) -> task<bool> {
    co_await detail::switch_to{p.at(0)};
    asio::post(p.at(0), [&flag] { flag = true; });
    co_await sleep_for(20ms);
    co_return flag.load();
  };
  EXPECT_TRUE(sync_wait(body(pool, other_ran)));
}

// Off reactor threads the sleep runs on the default pool and resumes there.
TEST(SleepFor, OffReactorThreadsResumesOnTheDefaultPool) {
  auto body = []() -> task<bool> {
    const auto begin = std::chrono::steady_clock::now();
    co_await sleep_for(20ms);
    co_return std::chrono::steady_clock::now() - begin >= 20ms &&
        io_pool::default_pool().owns_current_thread();
  };
  EXPECT_TRUE(sync_wait(body()));  // the test's main thread
  std::thread([&] { EXPECT_TRUE(sync_wait(body())); }).join();
}

}  // namespace
}  // namespace corvid
