// Unix-domain sockets, transport counters and the write-coalescing switches.
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unistd.h>

#include "test_support.hpp"

namespace corvid_test {
namespace {

std::string temp_socket_path() {
  return "/tmp/corvid-test-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".sock";
}

// The server counts a write when its completion handler runs, which may be just after the
// client already has the bytes: wait (bounded) for the counters to catch up.
corvid::transport_stats settled_server_stats(corvid::rpc_server& server, std::uint64_t frames) {
  eventually([&] { return server.stats().frames_sent >= frames; });
  return server.stats();
}

// Issues `n` pipelined add calls and returns how many came back right. They are mostly issued
// from the client's reactor thread, where the first reply resumes us unless it arrived before
// we suspended. From either thread, calls queued while a write is in flight share the next one,
// so the batching asserted below does not depend on which thread issued them.
int pipelined_adds(corvid::rpc_client& client, int n) {
  return corvid::sync_wait([&]() -> corvid::task<int> {
    if (!co_await client.call<noop>()) co_return -1;
    std::vector<corvid::async_reply_t<add>> pending;
    for (int i = 0; i < n; ++i) pending.push_back(co_await client.send_request<add>(i, 1));
    int ok = 0;
    for (int i = 0; i < n; ++i) {
      auto r = co_await std::move(pending[i]);
      if (r && *r == i + 1) ++ok;
    }
    co_return ok;
  }());
}

TEST(transport, unix_domain_socket) {
  auto cfg = test_server::make_config();
  const std::string path = temp_socket_path();
  cfg.address = "unix:" + path;
  {
    test_server srv(cfg);
    EXPECT_EQ(srv.port(), 0);
    corvid::rpc_client client;
    ASSERT_FALSE(corvid::sync_wait(connect(client, "unix:" + path)));
    EXPECT_EQ(pipelined_adds(client, 1000), 1000);
    auto peer = corvid::sync_wait(
        [&]() -> corvid::task<
                  corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>> {
          co_return co_await client.call_with_attachment<with_context>("a", std::string("b"));
        }());
    ASSERT_TRUE(peer.has_value());
    EXPECT_EQ(peer->value.rfind("unix", 0), 0u) << peer->value;
    EXPECT_EQ(peer->attachment, "ab");
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "socket file left behind";
  corvid::rpc_client late;
  EXPECT_EQ(corvid::sync_wait(connect(late, "unix:" + path)).code(),
            corvid::rpc_errc::connect_failed);
}

TEST(transport, counters_and_coalescing_under_pipelining) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  ASSERT_EQ(pipelined_adds(client, 5000), 5000);
  const auto s = settled_server_stats(srv.server(), 5001);
  const auto c = client.stats();
  EXPECT_EQ(s.frames_received, 5001u);  // + the noop that moved us onto the reactor
  EXPECT_EQ(s.frames_sent, 5001u);
  EXPECT_EQ(c.frames_sent, 5001u);
  EXPECT_EQ(c.frames_received, 5001u);
  EXPECT_EQ(c.bytes_sent, s.bytes_received);
  EXPECT_EQ(s.bytes_sent, c.bytes_received);
  EXPECT_GT(s.write_syscalls, 0u);
  // 5000 requests queued at once cannot have needed one write each on either side.
  EXPECT_GT(c.frames_per_write(), 4.0) << c.write_syscalls << " client writes";
  EXPECT_GT(s.frames_per_write(), 4.0) << s.write_syscalls << " server writes";
}

TEST(transport, coalescing_off_writes_one_frame_per_syscall) {
  auto cfg = test_server::make_config();
  cfg.coalesce_writes = false;
  test_server srv(cfg);
  corvid::client_config ccfg;
  ccfg.coalesce_writes = false;
  corvid::rpc_client client(ccfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  ASSERT_EQ(pipelined_adds(client, 2000), 2000);
  const auto s = settled_server_stats(srv.server(), 2001);
  const auto c = client.stats();
  EXPECT_EQ(c.frames_sent, 2001u);
  EXPECT_EQ(c.write_syscalls, 2001u);
  EXPECT_EQ(s.frames_sent, 2001u);
  EXPECT_EQ(s.write_syscalls, 2001u);
}

}  // namespace
}  // namespace corvid_test

namespace corvid_test {
namespace {

// Attachments above client_config::zero_copy_threshold are written from the caller's memory.
// Each caller frees its buffer as soon as its call completes: ASan proves no write still
// reads it, and every reply proves the bytes arrived intact.
TEST(transport, zero_copy_attachments_complete_only_after_their_write) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  constexpr int calls = 24;
  int intact = 0;
  corvid::sync_wait([&]() -> corvid::task<void> {
    std::vector<std::unique_ptr<std::string>> buffers;
    std::vector<corvid::async_reply<corvid::detail::call_state<std::string, true>>> pending;
    for (int i = 0; i < calls; ++i) {
      buffers.push_back(std::make_unique<std::string>((256 << 10) + i, static_cast<char>('a' + i)));
      pending.push_back(co_await client.send_request_with<with_context>(
          {std::chrono::milliseconds(-1), *buffers.back()}, std::string("!")));
    }
    for (int i = 0; i < calls; ++i) {
      auto r = co_await std::move(pending[i]);
      const std::string expected = *buffers[i] + "!";
      buffers[i].reset();  // the call is complete: its bytes must no longer be referenced
      if (r && r->attachment == expected) ++intact;
    }
  }());
  EXPECT_EQ(intact, calls);
}

TEST(transport, zero_copy_call_failing_mid_transfer_still_ends) {
  auto cfg = test_server::make_config();
  cfg.max_frame_size = 1 << 20;  // the 4 MiB request is refused: the server closes mid-write
  test_server srv(cfg);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  auto big = std::make_unique<std::string>(4 << 20, 'z');
  auto r = corvid::sync_wait(
      [&]() -> corvid::task<
                corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>> {
        co_return co_await client.call_with_attachment<with_context>(*big, std::string("!"));
      }());
  big.reset();
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(r.error().code() == corvid::rpc_errc::message_too_large ||
              r.error().code() == corvid::rpc_errc::connection_closed)
      << r.error().message();
}

}  // namespace
}  // namespace corvid_test

namespace corvid_test {
namespace {

// Callers resumed by a finished zero-copy write immediately queue their next large call,
// re-entering the connection while it is still releasing the previous batch. (A stress test:
// the crash it guards against needs a reply to overtake its multi-syscall write, which
// corvid-bench at 8 MiB x c=16 hit every time but this test only sometimes provokes.)
TEST(transport, zero_copy_callers_resubmitting_from_completion) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  constexpr int workers = 16, rounds = 10;
  std::atomic<int> intact{0}, left{workers};
  std::mutex m;
  std::condition_variable cv;
  const std::string payload(4 << 20, 'q');
  for (int w = 0; w < workers; ++w) {
    [](corvid::rpc_client& c, const std::string& p, std::atomic<int>& ok,
       std::atomic<int>& remaining, std::mutex& mu,
       std::condition_variable& done) -> corvid::detail::detached {
      for (int i = 0; i < rounds; ++i) {
        // A tiny reply to a big request: it can arrive before the write's completion runs.
        auto r = co_await c.call_with_attachment<noop>(p);
        if (r) ++ok;
      }
      if (--remaining == 0) {
        std::lock_guard lk(mu);
        done.notify_all();
      }
    }(client, payload, intact, left, m, cv);
  }
  std::unique_lock lk(m);
  ASSERT_TRUE(cv.wait_for(lk, 60s, [&] { return left.load() == 0; }));
  EXPECT_EQ(intact.load(), workers * rounds);
}

}  // namespace
}  // namespace corvid_test
