// Cancellation on the wire: a client that gives up on a call (explicit cancel or timeout)
// sends a cancel frame, and a coroutine handler still running on the server sees it.
#include <atomic>
#include <thread>

#include "test_support.hpp"

namespace corvid_test {
namespace {

// What the napping handler saw; reset per test.
std::atomic<int> naps_started{0};
std::atomic<int> naps_cancelled{0};  // woke early with ctx.cancelled() set
std::atomic<int> naps_completed{0};  // slept the whole time
std::atomic<int> naps_polling{0};    // nap_then_poll's sleep is over

corvid::task<int> nap(corvid::request_context& ctx, int ms) {
  naps_started.fetch_add(1);
  const bool slept = co_await ctx.sleep_for(std::chrono::milliseconds(ms));
  if (!slept && ctx.cancelled()) {
    naps_cancelled.fetch_add(1);
  } else {
    naps_completed.fetch_add(1);
  }
  co_return ms;
}

// Sleeps briefly (a completed cancellable sleep), then polls for cancellation without one:
// a cancel must not reach the finished sleep's timer.
corvid::task<int> nap_then_poll(corvid::request_context& ctx) {
  naps_started.fetch_add(1);
  (void)co_await ctx.sleep_for(1ms);
  naps_polling.fetch_add(1);
  while (!ctx.cancelled()) co_await corvid::sleep_for(5ms);
  naps_cancelled.fetch_add(1);
  co_return 0;
}

class cancel_server {
 public:
  cancel_server() : server_(test_server::make_config()) {
    naps_started = naps_cancelled = naps_completed = naps_polling = 0;
    server_.register_handler<nap, nap_then_poll, echo>();
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  std::uint16_t port() const { return server_.port(); }
  corvid::rpc_server& server() { return server_; }

 private:
  corvid::rpc_server server_;
};

TEST(Cancellation, ExplicitCancelReachesASleepingCoroutineHandler) {
  cancel_server s;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  auto reply = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<nap>> {
    co_return co_await client.send_request<nap>(60'000);
  }());
  ASSERT_TRUE(eventually([] { return naps_started == 1; }));

  reply.cancel();
  EXPECT_TRUE(reply.ready());  // the caller does not wait for the server
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await std::move(reply);
  }());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::cancelled);

  // The handler wakes at once instead of sleeping a minute, and its result is not sent.
  ASSERT_TRUE(eventually([] { return naps_cancelled == 1; }));
  EXPECT_EQ(naps_completed, 0);
  EXPECT_EQ(client.stats().calls_cancelled, 1u);
  EXPECT_TRUE(eventually([&] { return s.server().stats().calls_cancelled == 1; }));
  // The connection carries on.
  auto e =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call<echo>("still here");
      }());
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(*e, "still here");
  // The cancelled call's result is never sent: on a raw connection, which reads every frame
  // in order, the reply to a call made after the cancel took effect is the next frame.
  raw_connection raw(s.port());
  raw.send_request<nap>(7, 0, 60'000);
  ASSERT_TRUE(eventually([] { return naps_started == 2; }));
  raw.send_cancel(7);
  ASSERT_TRUE(eventually([] { return naps_cancelled == 2; }));
  raw.send_request<echo>(8, 0, std::string("after"));
  auto next = raw.read_frame();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->header.request_id, 8u) << "the cancelled call was answered";
}

TEST(Cancellation, CancelAfterACompletedSleepIsSafe) {
  cancel_server s;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  auto reply = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<nap_then_poll>> {
    co_return co_await client.send_request<nap_then_poll>();
  }());
  ASSERT_TRUE(eventually([] { return naps_polling == 1; }));  // the 1 ms sleep's timer is gone
  reply.cancel();
  EXPECT_TRUE(eventually([] { return naps_cancelled == 1; }));
}

TEST(Cancellation, TimeoutCancelsTheServerHandler) {
  cancel_server s;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call_for<nap>(100ms, 60'000);
  }());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout);
  EXPECT_TRUE(eventually([] { return naps_cancelled == 1; }));
  EXPECT_EQ(client.stats().calls_cancelled, 1u);
}

TEST(Cancellation, NoCancelFrameWhenDisabled) {
  cancel_server s;
  corvid::client_config cfg;
  cfg.send_cancel = false;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call_for<nap>(50ms, 400);
  }());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout);
  // The handler sleeps its full 400 ms: nobody told it.
  EXPECT_TRUE(eventually([] { return naps_completed == 1; }));
  EXPECT_EQ(naps_cancelled, 0);
  EXPECT_EQ(client.stats().calls_cancelled, 0u);
}

TEST(Cancellation, CancelAfterTheReplyIsANoOp) {
  cancel_server s;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    auto reply = co_await client.send_request<nap>(1);
    while (!reply.ready()) co_await corvid::sleep_for(1ms);
    reply.cancel();  // too late: the value stays
    co_return co_await std::move(reply);
  }());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 1);
  EXPECT_EQ(client.stats().calls_cancelled, 0u);
}

TEST(Cancellation, ClosingTheConnectionCancelsRunningHandlers) {
  cancel_server s;
  {
    corvid::rpc_client client;
    ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
    auto reply = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<nap>> {
      co_return co_await client.send_request<nap>(60'000);
    }());
    ASSERT_TRUE(eventually([] { return naps_started == 1; }));
    client.close();
  }
  EXPECT_TRUE(eventually([] { return naps_cancelled == 1; }));
}

TEST(Cancellation, StopCancelsHandlersStillRunningAfterItsTimeout) {
  auto cfg = test_server::make_config();
  cfg.stop_timeout = 200ms;
  naps_started = naps_cancelled = naps_completed = 0;
  corvid::rpc_server server(cfg);
  server.register_handler<nap>();
  ASSERT_FALSE(server.async_start());
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, "127.0.0.1:" + std::to_string(server.port()))));
  auto reply = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<nap>> {
    co_return co_await client.send_request<nap>(60'000);
  }());
  ASSERT_TRUE(eventually([] { return naps_started == 1; }));
  const auto start = std::chrono::steady_clock::now();
  server.stop();  // drains for 200 ms, then closes: the minute-long nap is cancelled
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(naps_cancelled, 1);
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await std::move(reply);
  }());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
}

TEST(Cancellation, CancelFramesForUnknownIdsAreIgnored) {
  cancel_server s;
  raw_connection raw(s.port());
  corvid::protocol::frame_header cancel;
  cancel.type = corvid::protocol::msg_type::cancel;
  cancel.request_id = 12345;
  raw.send(frame_bytes(cancel, {}));
  raw.send(request_frame(7, corvid::protocol::function_id<echo>(), std::string_view("hi")));
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.type, corvid::protocol::msg_type::response);
  EXPECT_EQ(f->header.request_id, 7u);
  EXPECT_EQ(f->header.status, corvid::rpc_errc::ok);
}

TEST(Cancellation, ServerAnswersPingWithPong) {
  cancel_server s;
  raw_connection raw(s.port());
  corvid::protocol::frame_header ping;
  ping.type = corvid::protocol::msg_type::ping;
  ping.request_id = 0xfeed;
  raw.send(frame_bytes(ping, {}));
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.type, corvid::protocol::msg_type::pong);
  EXPECT_EQ(f->header.request_id, 0xfeedu);
  EXPECT_EQ(f->header.body_length, 0u);
}

}  // namespace
}  // namespace corvid_test
