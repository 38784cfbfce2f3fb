// The discovery sources' background thread (src/discovery/stoppable_worker.hpp): it runs its
// body again and again, a stop wakes it out of a long sleep, and destroying it joins the
// thread. Everything waits on events; a time bound only means "it hung".
#include "discovery/stoppable_worker.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>

#include <gtest/gtest.h>

#include "eventually.hpp"

namespace corvid::discovery {
namespace {

using namespace std::chrono_literals;

constexpr auto hung = 30s;  // no test here waits anywhere near this long unless it hangs

// Runs `f` on another thread; false if it has not returned within `hung` (then it leaks).
template <class F>
bool returns(F f) {
  auto done = std::make_shared<std::promise<void>>();
  auto ended = done->get_future();
  std::thread([f = std::move(f), done]() mutable {
    f();
    done->set_value();
  }).detach();
  return ended.wait_for(hung) == std::future_status::ready;
}

TEST(stoppable_worker, a_stop_wakes_it_from_a_long_sleep) {
  auto worker = std::make_shared<stoppable_worker>();
  std::promise<void> sleeping;
  std::atomic<bool> slept_out{true};
  worker->start([&, w = worker.get()](std::stop_token stop) {
    sleeping.set_value();
    slept_out = w->sleep_for(stop, std::chrono::hours(1));
  });
  sleeping.get_future().wait();
  EXPECT_TRUE(returns([worker] { worker->stop(); }));
  EXPECT_FALSE(slept_out);  // the sleep ended because of the stop
}

TEST(stoppable_worker, a_polling_worker_sleeping_a_long_interval_stops_on_destruction) {
  auto worker = std::make_unique<stoppable_worker>();
  std::atomic<int> rounds{0};
  worker->start_polling(std::chrono::hours(1), [&] { ++rounds; });
  EXPECT_TRUE(returns([w = worker.release()] { delete w; }));
  EXPECT_EQ(rounds, 0);  // a stop is not a round
}

TEST(stoppable_worker, runs_the_body_again_and_again) {
  std::atomic<int> rounds{0};
  stoppable_worker worker;
  worker.start_polling(1ms, [&] { ++rounds; });
  EXPECT_TRUE(corvid::test::eventually([&] { return rounds >= 5; }, hung));
}

TEST(stoppable_worker, a_wake_runs_a_round_at_once_and_none_is_lost) {
  std::atomic<int> rounds{0};
  std::promise<void> in_round;
  std::promise<void> release;
  auto released = release.get_future().share();
  stoppable_worker worker;
  worker.start_polling(std::chrono::hours(1), [&] {
    if (++rounds == 1) {
      in_round.set_value();
      released.wait();
    }
  });
  worker.wake();  // ends the hour's wait
  in_round.get_future().wait();
  worker.wake();  // while the first round runs: kept for the next wait
  release.set_value();
  EXPECT_TRUE(corvid::test::eventually([&] { return rounds == 2; }, hung));
}

TEST(stoppable_worker, destruction_waits_for_the_body_to_end) {
  std::promise<void> started;
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<bool> body_ended{false};
  auto worker = std::make_unique<stoppable_worker>();
  worker->start([&](std::stop_token) {
    started.set_value();
    released.wait();  // ignores the stop: the destructor must wait for it
    body_ended = true;
  });
  started.get_future().wait();
  std::atomic<bool> destroyed{false}, ended_when_destroyed{false};
  std::thread destroyer([&] {
    worker.reset();
    ended_when_destroyed = body_ended.load();
    destroyed = true;
  });
  // The body is held, so the destructor (blocked in join()) cannot have returned yet.
  EXPECT_FALSE(destroyed);
  release.set_value();
  destroyer.join();
  EXPECT_TRUE(ended_when_destroyed);
}

}  // namespace
}  // namespace corvid::discovery
