// The worker pool's queue on its own: order, the length and byte bounds, stop.
#include "server/worker_pool.hpp"

#include <atomic>
#include <chrono>
#include <future>
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

  bool wait_done(const test_job& j) {
    return corvid::test::eventually([&] { return j.done.load(); }, 5s);
  }
};

TEST_F(WorkerPool, RunsJobsInArrivalOrderOnItsThreads) {
  worker_pool pool(1, 100, 1 << 20);
  EXPECT_FALSE(pool.owns_current_thread());
  test_job first(0, order, order_mutex);
  first.gate = gate;
  first.pool = &pool;
  ASSERT_EQ(pool.submit(first), worker_pool::refusal::none);
  std::vector<std::unique_ptr<test_job>> rest;
  for (int i = 1; i <= 5; ++i) {
    rest.push_back(std::make_unique<test_job>(i, order, order_mutex));
    ASSERT_EQ(pool.submit(*rest.back()), worker_pool::refusal::none);
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
  ASSERT_EQ(pool.submit(running), worker_pool::refusal::none);
  // Until the worker takes it, the first job counts as queued.
  ASSERT_TRUE(corvid::test::eventually([&] { return pool.busy() == 1; }, 5s));
  test_job a(1, order, order_mutex), b(2, order, order_mutex), c(3, order, order_mutex);
  EXPECT_EQ(pool.submit(a), worker_pool::refusal::none);
  EXPECT_EQ(pool.submit(b), worker_pool::refusal::none);
  EXPECT_EQ(pool.submit(c), worker_pool::refusal::length);
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
  ASSERT_EQ(pool.submit(running), worker_pool::refusal::none);
  ASSERT_TRUE(corvid::test::eventually([&] { return pool.busy() == 1; }, 5s));
  test_job big(1, order, order_mutex, 5000);  // larger than the bound: fits an empty queue
  test_job small(2, order, order_mutex, 10);
  EXPECT_EQ(pool.submit(big), worker_pool::refusal::none);
  EXPECT_EQ(pool.queued_bytes(), 5000u);
  EXPECT_EQ(pool.submit(small), worker_pool::refusal::bytes);
  const std::string why = pool.describe(worker_pool::refusal::bytes);
  EXPECT_NE(why.find("5000 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("worker_queue_bytes = 1000"), std::string::npos) << why;
  open.set_value();
  ASSERT_TRUE(wait_done(big));
  EXPECT_EQ(pool.queued_bytes(), 0u);
  EXPECT_EQ(pool.submit(small), worker_pool::refusal::none);
  ASSERT_TRUE(wait_done(small));
}

TEST_F(WorkerPool, StopRunsWhatIsQueuedThenJoins) {
  auto pool = std::make_unique<worker_pool>(2, 100, 1 << 20);
  std::vector<std::unique_ptr<test_job>> jobs;
  for (int i = 0; i < 10; ++i) {
    jobs.push_back(std::make_unique<test_job>(i, order, order_mutex));
    jobs.back()->gate = gate;
    ASSERT_EQ(pool->submit(*jobs.back()), worker_pool::refusal::none);
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
  EXPECT_EQ(pool->submit(late), worker_pool::refusal::stopped);
  pool->stop();  // idempotent
  pool.reset();
}

}  // namespace
}  // namespace corvid::detail
