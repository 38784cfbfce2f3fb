// task<T> and sync_wait: laziness, results, exceptions, frame lifetime. That symmetric
// transfer keeps deep or long await chains off the stack: task_stack_test.cpp.
#include "corvid/task.hpp"

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <gtest/gtest.h>

#include "corvid/detail/switch_to.hpp"
#include "corvid/runtime/io_pool.hpp"
#include "corvid/runtime/sleep.hpp"
#include "corvid/sync_wait.hpp"

#include "chain_tasks.hpp"

namespace corvid {
namespace {

using test::answer;
using test::depth;
using test::sequential;

task<std::string> greeting() { co_return std::string(100, 'x'); }  // heap-allocated string
task<std::unique_ptr<int>> boxed(int v) { co_return std::make_unique<int>(v); }
task<int> fail() {
  throw std::runtime_error("boom");
  co_return 0;
}
task<> fail_void() {
  throw std::runtime_error("void boom");
  co_return;
}

TEST(Task, IsLazyUntilAwaited) {
  bool ran = false;
  auto body = [](bool& r) -> task<int> {
    r = true;
    co_return 1;
  };
  task<int> t = body(ran);
  EXPECT_FALSE(ran) << "creating a task must not start it";
  EXPECT_EQ(sync_wait(std::move(t)), 1);
  EXPECT_TRUE(ran);
}

TEST(Task, ReturnsValues) {
  EXPECT_EQ(sync_wait(answer()), 42);
  EXPECT_EQ(sync_wait(greeting()), std::string(100, 'x'));
  std::unique_ptr<int> p = sync_wait(boxed(7));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
}

TEST(Task, VoidTaskRunsBody) {
  int hits = 0;
  auto body = [](int& h) -> task<> {
    ++h;
    co_return;
  };
  sync_wait(body(hits));
  EXPECT_EQ(hits, 1);
}

TEST(Task, NestedAwaitsCombineResults) {
  auto outer = []() -> task<std::string> {
    const int a = co_await answer();
    std::unique_ptr<int> b = co_await boxed(8);
    std::string s = co_await greeting();
    co_return std::to_string(a + *b) + ":" + std::to_string(s.size());
  };
  EXPECT_EQ(sync_wait(outer()), "50:100");
}

TEST(Task, ExceptionPropagatesThroughCoAwait) {
  auto outer = []() -> task<std::string> {
    try {
      co_await fail();
    } catch (const std::runtime_error& e) {
      co_return std::string("caught ") + e.what();
    }
    co_return "not thrown";
  };
  EXPECT_EQ(sync_wait(outer()), "caught boom");
}

TEST(Task, ExceptionPropagatesThroughSyncWait) {
  EXPECT_THROW(sync_wait(fail()), std::runtime_error);
  EXPECT_THROW(sync_wait(fail_void()), std::runtime_error);
  // Through two levels of co_await as well.
  auto outer = []() -> task<int> {
    co_return co_await fail() + 1;
  };
  EXPECT_THROW(sync_wait(outer()), std::runtime_error);
}

// Results of chains short enough to pass whether or not the compiler tail-calls.
TEST(Task, ChainsOfSynchronousAwaitsComputeCorrectly) {
  EXPECT_EQ(sync_wait(depth(2000)), 2000);
  EXPECT_EQ(sync_wait(sequential(2000)), 84000);
}

struct counted {
  static inline int alive = 0;
  counted() { ++alive; }
  counted(const counted&) = delete;
  ~counted() { --alive; }
};

// A never-awaited task must still free its frame (and the locals in it) when dropped.
TEST(Task, DestroyingUnawaitedTaskFreesFrame) {
  auto body = []() -> task<int> {
    counted c;
    co_return 1;
  };
  {
    task<int> t = body();
    EXPECT_TRUE(t.valid());
    EXPECT_EQ(counted::alive, 0) << "lazy: the local is not constructed yet";
  }
  EXPECT_EQ(counted::alive, 0);

  // Parameters live in the frame from creation on, so they show the frame being freed.
  auto with_param = [](std::shared_ptr<int> p) -> task<int> {
    co_return *p;
  };
  auto shared = std::make_shared<int>(3);
  {
    task<int> t = with_param(shared);
    EXPECT_EQ(shared.use_count(), 2) << "the frame holds a copy";
  }
  EXPECT_EQ(shared.use_count(), 1) << "destroying the task must destroy its frame";
}

// Minimal eager coroutine that co_awaits a task and then parks, so a test can leave a task
// chain suspended in the middle and destroy it from outside.
struct starter {
  struct promise_type {
    starter get_return_object() {
      return starter{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
  explicit starter(std::coroutine_handle<promise_type> handle) : h(handle) {}
  starter(const starter&) = delete;
  ~starter() { h.destroy(); }
  std::coroutine_handle<promise_type> h;
};

starter start(task<>& t) { co_await t; }

// Destroying a task that is suspended inside a nested await must free the whole chain: the
// outer frame owns the inner task, whose frame holds the local.
TEST(Task, DestroyingSuspendedChainFreesNestedFrames) {
  auto inner = []() -> task<> {
    counted c;
    co_await std::suspend_always{};  // never resumed
  };
  auto outer = [](auto make_inner) -> task<> {
    co_await make_inner();
  };
  {
    task<> t = outer(inner);
    {
      starter s = start(t);
      EXPECT_FALSE(s.h.done());
      EXPECT_EQ(counted::alive, 1) << "the inner body ran up to its suspension point";
    }
    EXPECT_EQ(counted::alive, 1) << "only the awaiting driver is gone";
  }
  EXPECT_EQ(counted::alive, 0) << "destroying the outer task destroys the inner frame";
}

TEST(Task, MoveTransfersOwnership) {
  task<int> a = answer();
  task<int> b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking moved-from state
  EXPECT_TRUE(b.valid());
  task<int> c;
  EXPECT_FALSE(c.valid());
  c = std::move(b);
  EXPECT_EQ(sync_wait(std::move(c)), 42);
}

// sync_wait must block until a task that finishes on another thread is done, and hand the
// value back across threads.
TEST(SyncWait, TaskFinishingOnReactorThread) {
  io_pool pool(1);
  const auto caller = std::this_thread::get_id();
  auto body = [](io_pool& p, std::thread::id c) -> task<std::string> {
    co_await detail::switch_to{p.at(0)};
    if (std::this_thread::get_id() == c) co_return "still on caller";
    if (current_reactor() != &p.at(0)) co_return "wrong reactor";
    co_return std::string(64, 'r');
  };
  EXPECT_EQ(sync_wait(body(pool, caller)), std::string(64, 'r'));
}

TEST(SyncWait, TaskResumedBySleepOnReactor) {
  io_pool pool(2);
  auto body = [](io_pool& p) -> task<std::unique_ptr<int>> {
    co_await detail::switch_to{p.at(1)};
    co_await sleep_for(std::chrono::milliseconds(5));
    co_return std::make_unique<int>(current_reactor() == &p.at(1) ? 99 : -1);
  };
  std::unique_ptr<int> r = sync_wait(body(pool));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(*r, 99);
}

TEST(SyncWait, ExceptionFromReactorThreadReachesCaller) {
  io_pool pool(1);
  auto body = [](io_pool& p) -> task<> {
    co_await detail::switch_to{p.at(0)};
    throw std::out_of_range("from reactor");
  };
  EXPECT_THROW(sync_wait(body(pool)), std::out_of_range);
}

// Anything co_await takes, not only a task: here an awaitable that hands a move-only value over
// on a reactor thread, and one with no value.
struct value_on_reactor {
  asio::io_context& reactor;
  std::unique_ptr<int> value;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    asio::post(reactor, [h] { h.resume(); });
  }
  std::unique_ptr<int> await_resume() {
    if (current_reactor() != &reactor) return nullptr;
    return std::move(value);
  }
};

TEST(SyncWait, TakesAnyAwaitable) {
  io_pool pool(1);
  std::unique_ptr<int> r = sync_wait(value_on_reactor{pool.at(0), std::make_unique<int>(7)});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(*r, 7);
  sync_wait(detail::switch_to{pool.at(0)});
}

}  // namespace
}  // namespace corvid
