// Client-side backpressure (issue 5): caps on calls in flight and on queued request bytes.
// At a cap a call waits for room (the default) or fails at once with client_busy; a call
// that ends while waiting was never sent, and says so.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../integration/test_support.hpp"

namespace corvid_test {
namespace {

using busy_policy = corvid::client_config::busy_policy;

corvid::client_config capped(std::size_t calls, std::size_t bytes, busy_policy policy) {
  corvid::client_config cfg;
  cfg.max_pending_calls = calls;
  cfg.max_queued_request_bytes = bytes;
  cfg.when_busy = policy;
  return cfg;
}

// Accepts one connection, reads `first` bytes of it, then stops reading until resume():
// a server whose socket buffers are full, so the client's write stays in flight.
class stalling_peer {
 public:
  explicit stalling_peer(std::size_t first)
      : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this, first] {
      asio::ip::tcp::socket s(io_);
      std::error_code ec;
      acceptor_.accept(s, ec);
      if (ec) return;
      std::vector<char> buf(64 * 1024);
      while (!ec && read_ < first) read_ += s.read_some(asio::buffer(buf), ec);
      std::unique_lock lk(mutex_);
      cv_.wait(lk, [this] { return resumed_; });
      lk.unlock();
      while (!ec) read_ += s.read_some(asio::buffer(buf), ec);  // until the client closes
    });
  }
  ~stalling_peer() {
    resume();
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // wakes an accept still waiting
    thread_.join();
  }
  std::string endpoint() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  std::size_t bytes_read() const { return read_; }
  void resume() {
    std::lock_guard lk(mutex_);
    resumed_ = true;
    cv_.notify_all();
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::atomic<std::size_t> read_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool resumed_ = false;
  std::thread thread_;
};

TEST(client_memory, fail_mode_refuses_calls_past_the_in_flight_cap_with_client_busy) {
  test_server srv;
  corvid::rpc_client client(capped(2, 0, busy_policy::fail));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto a = co_await client.send_request<sleepy>(200);
    auto b = co_await client.send_request<sleepy>(200);
    auto c = co_await client.send_request<sleepy>(1);
    auto rc = co_await std::move(c);
    EXPECT_FALSE(rc.has_value());
    if (!rc) {
      EXPECT_EQ(rc.error().code(), corvid::rpc_errc::client_busy);
      EXPECT_TRUE(rc.error().request_unsent());
    }
    EXPECT_EQ((co_await std::move(a)).value_or(-1), 200);
    EXPECT_EQ((co_await std::move(b)).value_or(-1), 200);
    // Room again once the replies are in.
    EXPECT_EQ((co_await client.call<sleepy>(1)).value_or(-1), 1);
  }());
  EXPECT_EQ(client.stats().calls_waited, 0u);
}

TEST(client_memory, wait_mode_send_request_suspends_until_a_reply_makes_room) {
  test_server srv;
  corvid::rpc_client client(capped(2, 0, busy_policy::wait));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto a = co_await client.send_request<sleepy>(300);
    auto b = co_await client.send_request<sleepy>(300);
    EXPECT_EQ(client.pending_calls(), 2u);
    auto c = co_await client.send_request<sleepy>(1);  // waits for a or b
    EXPECT_TRUE(a.ready() || b.ready()) << "admitted before a reply made room";
    EXPECT_LE(client.pending_calls(), 2u);
    EXPECT_EQ((co_await std::move(c)).value_or(-1), 1);
    EXPECT_EQ((co_await std::move(a)).value_or(-1), 300);
    EXPECT_EQ((co_await std::move(b)).value_or(-1), 300);
  }());
  EXPECT_EQ(client.stats().calls_waited, 1u);
}

TEST(client_memory, wait_mode_call_waits_too_and_its_deadline_keeps_running) {
  test_server srv;
  corvid::rpc_client client(capped(1, 0, busy_policy::wait));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto a = co_await client.send_request<sleepy>(2000);
    auto r = co_await client.call_for<sleepy>(100ms, 7);  // no room before its deadline
    EXPECT_FALSE(a.ready()) << "the deadline fired only when room came";
    EXPECT_EQ(r.has_value() ? corvid::rpc_errc::ok : r.error().code(), corvid::rpc_errc::timeout)
        << (r ? std::string("answered") : r.error().message());
    EXPECT_TRUE(!r && r.error().request_unsent());
    EXPECT_EQ(client.pending_calls(), 1u);
    EXPECT_EQ((co_await std::move(a)).value_or(-1), 2000);
    // With room, the next call goes straight out.
    EXPECT_EQ((co_await client.call<sleepy>(2)).value_or(-1), 2);
  }());
  // The server saw two requests: the timed-out one was never sent.
  EXPECT_TRUE(eventually([&] { return srv.server().stats().frames_received == 2; }));
  EXPECT_EQ(srv.server().stats().frames_received, 2u);
}

TEST(client_memory, close_ends_waiting_calls_as_unsent) {
  silent_server srv;  // never answers: the first call holds the only slot
  auto cfg = capped(1, 0, busy_policy::wait);
  cfg.request_timeout = 0ms;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  auto first = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<sleepy>> {
    co_return co_await client.send_request<sleepy>(1);
  }());
  corvid::expected<int, corvid::rpc_error> parked = 0;
  std::atomic<bool> admitted{false};
  std::thread waiter([&] {
    parked = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
      auto r = co_await client.send_request<sleepy>(1);
      admitted = true;
      co_return co_await std::move(r);
    }());
  });
  ASSERT_TRUE(eventually([&] { return client.stats().calls_waited == 1; }));
  EXPECT_FALSE(admitted.load());
  client.close();
  waiter.join();
  EXPECT_TRUE(admitted.load());  // send_request's co_await returned, with the error inside
  ASSERT_FALSE(parked.has_value());
  EXPECT_EQ(parked.error().code(), corvid::rpc_errc::connection_closed);
  EXPECT_TRUE(parked.error().request_unsent());
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await std::move(first);
  }());
  ASSERT_FALSE(r.has_value());
  EXPECT_FALSE(r.error().request_unsent());  // that one was written
}

TEST(client_memory, queued_bytes_cap_holds_requests_while_a_write_is_stuck) {
  for (const busy_policy policy : {busy_policy::fail, busy_policy::wait}) {
    SCOPED_TRACE(policy == busy_policy::fail ? "fail" : "wait");
    stalling_peer peer(1024 * 1024);
    // 32 MiB: more than loopback's socket buffers hold, so its write stays in flight. Sent
    // from this memory (zero copy), so it must outlive the big call (awaited at the end).
    const std::string huge(32 * 1024 * 1024, 'h');
    const std::string mid(3000, 'm');
    auto cfg = capped(0, 4096, policy);
    cfg.request_timeout = 0ms;
    cfg.heartbeat_interval = cfg.heartbeat_timeout = 0ms;
    corvid::rpc_client client(cfg);
    ASSERT_FALSE(corvid::sync_wait(connect(client, peer.endpoint())));
    auto big = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_with_t<echo>> {
      co_return co_await client.send_request_with<echo>({.attachment = huge}, "big");
    }());
    ASSERT_TRUE(eventually([&] { return peer.bytes_read() >= 1024 * 1024; }));
    // The queue is empty (the stuck batch left it): 3 KB fit, the next 3 KB do not.
    auto second = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_with_t<echo>> {
      co_return co_await client.send_request_with<echo>({.attachment = mid}, "second");
    }());
    EXPECT_FALSE(second.ready());
    std::atomic<bool> third_queued{false};
    std::optional<corvid::async_reply_with_t<echo>> third;
    std::thread t([&] {
      third = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_with_t<echo>> {
        co_return co_await client.send_request_with<echo>({.attachment = mid}, "third");
      }());
      third_queued = true;
    });
    if (policy == busy_policy::fail) {
      t.join();
      ASSERT_TRUE(third->ready());
      auto r = corvid::sync_wait(
          [&]() -> corvid::task<
                    corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>> {
            co_return co_await std::move(*third);
          }());
      ASSERT_FALSE(r.has_value());
      EXPECT_EQ(r.error().code(), corvid::rpc_errc::client_busy);
    } else {
      ASSERT_TRUE(eventually([&] { return client.stats().calls_waited == 1; }));
      EXPECT_FALSE(third_queued.load()) << "queued past the byte cap";
      peer.resume();  // the big write completes, the queue drains: room again
      EXPECT_TRUE(eventually([&] { return third_queued.load(); }, 20s));
      t.join();
      // It went out: all three requests reach the peer.
      const std::size_t all = huge.size() + 2 * mid.size();
      EXPECT_TRUE(eventually([&] { return peer.bytes_read() >= all; }));
    }
    client.close();
    // The big request is written from `huge`: its call ends only once the write no longer
    // reads it (closing or destroying the client does not wait for that), so `huge` may go
    // only after it ended.
    const auto big_result = corvid::sync_wait(
        [&]() -> corvid::task<
                  corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>> {
          co_return co_await std::move(big);
        }());
    EXPECT_FALSE(big_result.has_value());
  }
}

TEST(client_memory, a_pipelining_caller_is_held_at_the_byte_cap_by_a_stalled_server) {
  stalling_peer peer(64 * 1024);
  auto cfg = capped(0, 4 * 1024 * 1024, busy_policy::wait);
  cfg.request_timeout = 0ms;
  cfg.heartbeat_interval = cfg.heartbeat_timeout = 0ms;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, peer.endpoint())));
  // 2000 requests of 32 KiB (copied into the queue: below zero_copy_threshold), 62.5 MiB in
  // all, sent without awaiting a reply: one caller with no limit but the client's.
  constexpr int total = 2000;
  const std::string payload(32 * 1024, 'p');
  std::atomic<int> sent{0};
  const std::size_t rss_before = vm_rss();
  std::thread caller([&] {
    corvid::sync_wait([&]() -> corvid::task<void> {
      std::vector<corvid::async_reply_t<echo>> replies;
      for (int i = 0; i < total; ++i) {
        replies.push_back(co_await client.send_request<echo>(payload));
        ++sent;
      }
    }());
  });
  // Whatever happens below, the caller must be let go before the test ends.
  struct release_caller {
    stalling_peer& peer;
    std::thread& t;
    ~release_caller() {
      peer.resume();
      if (t.joinable()) t.join();
    }
  } release{peer, caller};
  // The caller stops: the kernel's buffers are full and the queue is at its cap. About time:
  // no event says the kernel's buffers are full, so "held" is "nothing moved for 300 ms".
  int held_at = -1;
  for (int last = -2; held_at != last;) {
    last = held_at;
    std::this_thread::sleep_for(300ms);
    held_at = sent.load();
  }
  const std::size_t rss_held = vm_rss();
  std::printf(
      "stalled server: caller held after %d of %d requests (%d KiB), %llu waits, "
      "RSS +%zu KiB\n",
      held_at, total, held_at * 32, static_cast<unsigned long long>(client.stats().calls_waited),
      (rss_held - std::min(rss_held, rss_before)) / 1024);
  // What the kernel took before the peer stalled, plus the 4 MiB queue: far from 2000.
  EXPECT_LT(held_at, total / 2);
  EXPECT_GE(client.stats().calls_waited, 1u);
  peer.resume();  // the peer reads again: the caller runs to the end
  EXPECT_TRUE(eventually([&] { return sent.load() == total; }, 30s));
  caller.join();
  client.close();
}

TEST(client_memory, a_request_bigger_than_the_bytes_cap_still_goes_out_alone) {
  test_server srv;
  corvid::rpc_client client(capped(0, 1024, busy_policy::fail));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  const std::string big(4096, 'q');
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call<echo>(big);
      }());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(*r, big);
}

TEST(client_memory, many_threads_through_tight_caps_all_get_their_own_replies) {
  test_server srv;
  // One call in flight per 3, and every request waits for an empty queue.
  corvid::rpc_client client(capped(3, 1, busy_policy::wait));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  constexpr int threads = 4;
  constexpr int calls = 300;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      corvid::sync_wait([&]() -> corvid::task<void> {
        std::vector<corvid::async_reply_t<echo>> replies;
        std::vector<std::string> sent;
        for (int i = 0; i < calls; ++i) {
          sent.push_back(std::to_string(t) + "/" + std::to_string(i));
          replies.push_back(co_await client.send_request<echo>(sent.back()));
          if (replies.size() == 8 || i == calls - 1) {  // pipelined in groups of 8
            for (std::size_t k = 0; k < replies.size(); ++k) {
              auto r = co_await std::move(replies[k]);
              if (!r) {
                ++failed;
              } else if (*r != sent[sent.size() - replies.size() + k]) {
                ++wrong;
              }
            }
            replies.clear();
          }
        }
      }());
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(client.stats().calls_waited, 0u);
  EXPECT_EQ(client.pending_calls(), 0u);
}

}  // namespace
}  // namespace corvid_test
