// The worker pool's queue on its own: order, the length and byte bounds, stop, and turns
// across connections' lanes.
#include "server/worker_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "eventually.hpp"

namespace corvid::detail {
namespace {

using namespace std::chrono_literals;

// A job that records its id, optionally waiting for a gate first.
struct test_job : blocking_job {
  int id = 0;
  std::vector<int>* order = nullptr;
  std::mutex* order_mutex = nullptr;
  std::shared_future<void> gate;
  std::atomic<bool> on_worker{false};
  const worker_pool* pool = nullptr;
  std::atomic<bool> done{false};
  std::function<void()> then;  // on the worker, once recorded

  test_job(int i, std::vector<int>& o, std::mutex& m, std::size_t b = 0)
      : order(&o), order_mutex(&m) {
    id = i;
    bytes = b;
    execute = [](blocking_job* j) noexcept {
      auto* t = static_cast<test_job*>(j);
      if (t->gate.valid()) t->gate.wait();
      if (t->pool != nullptr) t->on_worker = t->pool->owns_current_thread();
      {
        std::lock_guard lk(*t->order_mutex);
        t->order->push_back(t->id);
      }
      if (t->then) t->then();
      t->done = true;
    };
  }
};

class WorkerPool : public ::testing::Test {
 protected:
  std::vector<int> order;
  std::mutex order_mutex;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  blocking_lane lane;  // one connection's

  bool wait_done(const test_job& j) {
    return corvid::test::eventually([&] { return j.done.load(); }, 5s);
  }
};

TEST_F(WorkerPool, RunsALanesJobsInArrivalOrderOnItsThreads) {
  worker_pool pool(1, 100, 1 << 20);
  EXPECT_FALSE(pool.owns_current_thread());
  test_job first(0, order, order_mutex);
  first.gate = gate;
  first.pool = &pool;
  ASSERT_EQ(pool.submit(first, lane), worker_pool::refusal::none);
  std::vector<std::unique_ptr<test_job>> rest;
  for (int i = 1; i <= 5; ++i) {
    rest.push_back(std::make_unique<test_job>(i, order, order_mutex));
    ASSERT_EQ(pool.submit(*rest.back(), lane), worker_pool::refusal::none);
  }
  open.set_value();
  ASSERT_TRUE(wait_done(*rest.back()));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(first.on_worker);
}

TEST_F(WorkerPool, RefusesPastItsLength) {
  worker_pool pool(1, 2, 1 << 20);
  test_job running(0, order, order_mutex);
  running.gate = gate;
  ASSERT_EQ(pool.submit(running, lane), worker_pool::refusal::none);
  // Until the worker takes it, the first job counts as queued.
  ASSERT_TRUE(corvid::test::eventually([&] { return pool.busy() == 1; }, 5s));
  test_job a(1, order, order_mutex), b(2, order, order_mutex), c(3, order, order_mutex);
  EXPECT_EQ(pool.submit(a, lane), worker_pool::refusal::none);
  EXPECT_EQ(pool.submit(b, lane), worker_pool::refusal::none);
  EXPECT_EQ(pool.submit(c, lane), worker_pool::refusal::length);
  EXPECT_EQ(pool.queued(), 2u);
  const std::string why = pool.describe(worker_pool::refusal::length);
  EXPECT_NE(why.find("2 calls wait for 1 worker threads"), std::string::npos) << why;
  EXPECT_NE(why.find("worker_queue_length = 2"), std::string::npos) << why;
  open.set_value();
  ASSERT_TRUE(wait_done(b));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST_F(WorkerPool, RefusesPastItsBytesButAlwaysTakesOneJob) {
  worker_pool pool(1, 100, 1000);
  test_job running(0, order, order_mutex);
  running.gate = gate;
  ASSERT_EQ(pool.submit(running, lane), worker_pool::refusal::none);
  ASSERT_TRUE(corvid::test::eventually([&] { return pool.busy() == 1; }, 5s));
  test_job big(1, order, order_mutex, 5000);  // larger than the bound: fits an empty queue
  test_job small(2, order, order_mutex, 10);
  EXPECT_EQ(pool.submit(big, lane), worker_pool::refusal::none);
  EXPECT_EQ(pool.queued_bytes(), 5000u);
  EXPECT_EQ(pool.submit(small, lane), worker_pool::refusal::bytes);
  const std::string why = pool.describe(worker_pool::refusal::bytes);
  EXPECT_NE(why.find("5000 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("worker_queue_bytes = 1000"), std::string::npos) << why;
  open.set_value();
  ASSERT_TRUE(wait_done(big));
  EXPECT_EQ(pool.queued_bytes(), 0u);
  EXPECT_EQ(pool.submit(small, lane), worker_pool::refusal::none);
  ASSERT_TRUE(wait_done(small));
}

TEST_F(WorkerPool, StopRunsWhatIsQueuedThenJoins) {
  auto pool = std::make_unique<worker_pool>(2, 100, 1 << 20);
  std::vector<std::unique_ptr<test_job>> jobs;
  for (int i = 0; i < 10; ++i) {
    jobs.push_back(std::make_unique<test_job>(i, order, order_mutex));
    jobs.back()->gate = gate;
    ASSERT_EQ(pool->submit(*jobs.back(), lane), worker_pool::refusal::none);
  }
  std::thread opener([&] {
    // About time: by then stop() most likely waits for the gated jobs (earlier, the test is
    // only weaker, never wrong).
    std::this_thread::sleep_for(20ms);
    open.set_value();
  });
  pool->stop();  // returns once every job ran
  opener.join();
  for (const auto& j : jobs) EXPECT_TRUE(j->done) << j->id;
  test_job late(99, order, order_mutex);
  EXPECT_EQ(pool->submit(late, lane), worker_pool::refusal::stopped);
  pool->stop();  // idempotent
  pool.reset();
}

// Holds the only worker with a gated job on the fixture's lane, so that what is queued next
// waits until the gate opens.
class WorkerPoolTurns : public WorkerPool {
 protected:
  test_job running{0, order, order_mutex};
  std::vector<std::unique_ptr<test_job>> jobs;
  worker_pool pool{1, 100, 1 << 20};  // stopped first: the jobs outlive it

  ~WorkerPoolTurns() override {
    try {
      open.set_value();  // a test that failed early: its jobs run, and the pool can stop
    } catch (const std::future_error&) {
    }
    pool.stop();
  }
  void SetUp() override {
    running.gate = gate;
    ASSERT_EQ(pool.submit(running, lane), worker_pool::refusal::none);
    ASSERT_TRUE(corvid::test::eventually([&] { return pool.busy() == 1; }, 5s));
  }
  test_job& job(int id) {
    jobs.push_back(std::make_unique<test_job>(id, order, order_mutex));
    return *jobs.back();
  }
  void queue(int id, blocking_lane& l) {
    ASSERT_EQ(pool.submit(job(id), l), worker_pool::refusal::none);
  }
  bool wait_all() {
    return std::all_of(jobs.begin(), jobs.end(), [&](const auto& j) { return wait_done(*j); });
  }
};

// Two connections with three calls waiting each, then a third with one: the worker serves
// the lanes in turns, and the third connection's call waits for one call of each other
// connection, not for all six (first in, first out, it would run last).
TEST_F(WorkerPoolTurns, ServesLanesInTurns) {
  blocking_lane a, b, c;
  for (int id : {11, 12, 13}) queue(id, a);
  for (int id : {21, 22, 23}) queue(id, b);
  queue(31, c);
  open.set_value();
  ASSERT_TRUE(wait_all());
  EXPECT_EQ(order, (std::vector<int>{0, 11, 21, 31, 12, 22, 13, 23}));
}

// A connection with nothing waiting is fresh: its call goes before the backlog of lanes
// already served, to the next worker that frees.
TEST_F(WorkerPoolTurns, AFreshLaneGoesBeforeTheBacklog) {
  blocking_lane a, c;
  test_job& first = job(11);
  std::promise<void> hold;
  first.gate = hold.get_future().share();
  ASSERT_EQ(pool.submit(first, a), worker_pool::refusal::none);
  for (int id : {12, 13, 14}) queue(id, a);
  open.set_value();
  ASSERT_TRUE(corvid::test::eventually([&] { return pool.queued() == 3; }, 5s));  // 11 runs
  queue(31, c);
  hold.set_value();
  ASSERT_TRUE(wait_all());
  EXPECT_EQ(order, (std::vector<int>{0, 11, 31, 12, 13, 14}));
}

// A connection that keeps one call at a time waiting (each call queues the next as it runs,
// like a client that sends its next call once answered) gets one turn per round like the
// lanes with many calls waiting: it is not fresh again on every call, which would let it take
// every other worker turn and, with a few such connections, starve the backlog.
TEST_F(WorkerPoolTurns, OneCallAtATimeGetsOneTurnPerRound) {
  blocking_lane a, b, g;
  for (int id : {11, 12, 13, 14}) queue(id, a);
  for (int id : {21, 22, 23, 24}) queue(id, b);
  std::vector<test_job*> g_jobs;
  for (int id : {31, 32, 33, 34}) g_jobs.push_back(&job(id));
  for (std::size_t i = 0; i + 1 < g_jobs.size(); ++i) {
    g_jobs[i]->then = [&, next = g_jobs[i + 1]] {
      EXPECT_EQ(pool.submit(*next, g), worker_pool::refusal::none);
    };
  }
  ASSERT_EQ(pool.submit(*g_jobs[0], g), worker_pool::refusal::none);
  open.set_value();
  ASSERT_TRUE(wait_all());
  EXPECT_EQ(order, (std::vector<int>{0, 11, 21, 31, 12, 22, 32, 13, 23, 33, 14, 24, 34}));
}

}  // namespace
}  // namespace corvid::detail
