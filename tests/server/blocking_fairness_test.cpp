// Blocking calls are served in turns across connections: a connection that fills its share of
// the worker queue with calls does not make a newcomer's call wait for all of them.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "server_test_support.hpp"
#include "worker_queue_depth.hpp"

namespace corvid_server_test {
namespace {

using corvid::test::worker_queue_depth;

// The hostile calls run only as the test hands out permits, one call per permit.
std::mutex permit_mutex;
std::condition_variable permit_given;
int permits = 0;
bool all_open = false;
std::atomic<int> hostile_started{0};
std::atomic<bool> quick_ran{false};

void hostile() {
  ++hostile_started;
  std::unique_lock lk(permit_mutex);
  // The bound only ends a test that hangs.
  permit_given.wait_for(lk, 20s, [] { return permits > 0 || all_open; });
  if (permits > 0) --permits;
}
int quick_blocking() {
  quick_ran = true;
  return 1;
}

void give_permit() {
  {
    std::lock_guard lk(permit_mutex);
    ++permits;
  }
  permit_given.notify_one();
}
void open_all() {
  {
    std::lock_guard lk(permit_mutex);
    all_open = true;
  }
  permit_given.notify_all();
}

// Two connections pipeline `per_connection` calls each against 2 worker threads, then a
// third connection makes one call that returns at once. Each permit lets one hostile call end
// and its worker take the next call: the newcomer's must come after at most one call of each
// hostile connection (first in, first out, it would come after all 2 * per_connection - 2
// hostile calls queued before it).
TEST(BlockingFairness, NewcomerDoesNotWaitForOtherConnectionsQueuedCalls) {
  permits = 0;
  all_open = false;
  hostile_started = 0;
  quick_ran = false;
  auto cfg = loopback_config();
  cfg.worker_threads = 2;
  corvid::rpc_server s(cfg);
  s.register_blocking_handler<hostile, quick_blocking>();
  ASSERT_FALSE(s.async_start());
  constexpr int per_connection = 16;  // within a connection's share of the queue (128)

  corvid::rpc_client a, b, newcomer;
  connect(a, s);
  connect(b, s);
  connect(newcomer, s);
  std::vector<corvid::async_reply_t<hostile>> pending;
  for (int i = 0; i < per_connection; ++i) pending.push_back(send<hostile>(a));
  // a's first calls hold both workers before b's arrive.
  ASSERT_TRUE(eventually([] { return hostile_started == 2; }));
  for (int i = 0; i < per_connection; ++i) pending.push_back(send<hostile>(b));
  ASSERT_TRUE(eventually([&] { return worker_queue_depth(s) == 2 * per_connection - 2; }));
  auto reply = send<quick_blocking>(newcomer);
  ASSERT_TRUE(eventually([&] { return worker_queue_depth(s) == 2 * per_connection - 1; }));

  int given = 0;
  while (!quick_ran && given < 2 * per_connection) {
    give_permit();
    ++given;
    // The freed worker has taken its next call: the newcomer's, or one more hostile one.
    ASSERT_TRUE(eventually([&] { return quick_ran || hostile_started == 2 + given; }));
  }
  EXPECT_TRUE(quick_ran);
  // At most one call of each hostile connection went first (a lane that still counted as
  // fresh when the newcomer's call arrived is served once before it).
  EXPECT_LE(given, 3) << "the newcomer's call waited for " << given - 1
                      << " hostile calls to run before it";
  EXPECT_GT(worker_queue_depth(s), static_cast<std::size_t>(per_connection))
      << "most hostile calls are still queued";
  EXPECT_EQ(await<quick_blocking>(reply).value_or(0), 1);

  open_all();
  for (auto& p : pending) EXPECT_TRUE(await<hostile>(p));
}

}  // namespace
}  // namespace corvid_server_test
