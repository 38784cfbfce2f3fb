// Many calls in flight on one connection: from many threads, answered out of order, and
// abandoned by timeouts.
#include <atomic>
#include <thread>

#include "test_support.hpp"

namespace corvid_test {
namespace {

TEST(concurrency, ten_thousand_send_requests_from_four_threads_on_one_connection) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  constexpr int threads = 4, per_thread = 2500;
  std::atomic<int> correct{0}, wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      corvid::sync_wait([&]() -> corvid::task<void> {
        std::vector<corvid::async_reply_t<add>> pending;
        pending.reserve(per_thread);
        for (int i = 0; i < per_thread; ++i) {
          pending.push_back(co_await client.send_request<add>(i, t * 1000000));
        }
        for (int i = 0; i < per_thread; ++i) {
          auto r = co_await std::move(pending[i]);
          if (r && *r == i + t * 1000000) {
            ++correct;
          } else if (wrong++ == 0) {
            ADD_FAILURE() << "call " << i << " of thread " << t << ": "
                          << (r ? std::to_string(*r) : r.error().message());
          }
        }
      }());
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(correct.load(), threads * per_thread);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(concurrency, replies_arrive_out_of_order) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto slow = co_await client.send_request<sleepy>(400);
    auto fast = co_await client.send_request<sleepy>(5);
    auto r = co_await std::move(fast);
    EXPECT_EQ(r.value_or(-1), 5);
    // The later request was answered while the earlier one is still running.
    EXPECT_FALSE(slow.ready());
    auto s = co_await std::move(slow);
    EXPECT_EQ(s.value_or(-1), 400);
  }());
}

TEST(concurrency, call_for_times_out_and_the_late_reply_is_discarded) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  sleepy_finished = 0;
  const auto begin = std::chrono::steady_clock::now();
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call_for<sleepy>(50ms, 800);
  }());
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 50ms);  // a deadline never fires early
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout);
  EXPECT_EQ(sleepy_finished, 0) << "the caller waited for the reply";
  // The handler ends; a reply it sent (the cancel frame normally stops it) would be on the
  // wire before the next call's, and dropped.
  ASSERT_TRUE(eventually([] { return sleepy_finished == 1; }, 20s));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto next = co_await client.call<sleepy>(1);
    EXPECT_EQ(next.value_or(-1), 1);  // not the late 800
    EXPECT_EQ((co_await client.call<echo>("after")).value_or(""), "after");
  }());
}

TEST(concurrency, shorter_deadline_behind_longer_ones_fires_first) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  sleepy_finished = 0;
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto long_call = co_await client.send_request_with<sleepy>({20000ms, {}}, 200);
    auto r = co_await client.call_for<sleepy>(30ms, 1000);
    EXPECT_EQ(r.has_value() ? corvid::rpc_errc::ok : r.error().code(), corvid::rpc_errc::timeout);
    EXPECT_EQ(sleepy_finished, 0) << "the short deadline waited for a reply";
    auto l = co_await std::move(long_call);
    EXPECT_EQ(l.has_value() ? l->value : -1, 200);
  }());
}

TEST(concurrency, many_clients_on_many_threads) {
  test_server srv;
  constexpr int clients = 8, calls = 500;
  std::atomic<int> correct{0};
  std::vector<std::thread> workers;
  for (int c = 0; c < clients; ++c) {
    workers.emplace_back([&, c] {
      corvid::rpc_client client;
      if (corvid::sync_wait(connect(client, srv.endpoint()))) return;
      corvid::sync_wait([&]() -> corvid::task<void> {
        for (int i = 0; i < calls; ++i) {
          auto r = co_await client.call<&calculator::plus>(c * calls + i);
          if (r && *r == 10 + c * calls + i) ++correct;
        }
      }());
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(correct.load(), clients * calls);
}

}  // namespace
}  // namespace corvid_test
