// The seed's example and every kind of handler, over loopback.
#include "test_support.hpp"

namespace corvid_test {
namespace {

int not_registered(int x) { return x; }

TEST(api, seed_example_echo_add_send_request) {
  test_server srv;
  auto result = corvid::sync_wait([](std::string ep) -> corvid::task<std::string> {
    corvid::rpc_client client;
    if (auto ec = co_await client.connect(ep)) co_return "connect: " + ec.message();
    auto r = co_await client.call<echo>("hello");
    if (!r || *r != "hello") co_return "echo";
    auto s = co_await client.call_for<add>(100ms, 1, 2);
    if (!s || *s != 3) co_return "add";
    auto pending = co_await client.send_request<add>(3, 4);
    auto t = co_await std::move(pending);
    if (!t || *t != 7) co_return "send_request";
    co_return "ok";
  }(srv.endpoint()));
  EXPECT_EQ(result, "ok");
}

TEST(api, aggregate_struct_arguments_and_results) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  const point p{1, 2.5, "tag", {4, 5}};
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<point, corvid::rpc_error>> {
    co_return co_await client.call<move>(p, 10);
  }());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->x, 11);
  EXPECT_EQ(r->y, 2.5);
  EXPECT_EQ(r->tag, "tag");
  EXPECT_EQ(r->v, (std::vector<int>{4, 5, 10}));
}

TEST(api, void_member_and_context_handlers) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto v = co_await client.call<noop>();
    EXPECT_TRUE(v.has_value());
    auto plus = co_await client.call<&calculator::plus>(5);
    EXPECT_EQ(plus.value_or(-1), 15);
    auto times = co_await client.call<&calculator::times>(3);
    EXPECT_EQ(times.value_or(-1), 30);
    auto ctx = co_await client.call_with_attachment<with_context>("payload", std::string("!"));
    EXPECT_TRUE(ctx.has_value());
    if (ctx) {
      EXPECT_EQ(ctx->value.rfind("127.0.0.1:", 0), 0u) << ctx->value;  // the peer address
      EXPECT_EQ(ctx->attachment, "payload!");
    }
  }());
}

TEST(api, large_attachment_round_trip) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  std::string big(3 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + 3);
  auto r = corvid::sync_wait(
      [&]() -> corvid::task<
                corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>> {
        co_return co_await client.call_with_attachment<with_context>(big, std::string("#"));
      }());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->attachment.size(), big.size() + 1);
  EXPECT_TRUE(r->attachment == big + "#");
}

TEST(api, handler_errors_reach_the_caller) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto r = co_await client.call<fail_always>(1);
    EXPECT_FALSE(r.has_value());
    if (!r) {
      EXPECT_EQ(r.error().code(), corvid::rpc_errc::handler_error);
      EXPECT_EQ(r.error().message(), "boom: handler failed");
    }
    // A function the server never registered.
    auto nf = co_await client.call<not_registered>(1);
    EXPECT_FALSE(nf.has_value());
    if (!nf) {
      EXPECT_EQ(nf.error().code(), corvid::rpc_errc::function_not_found);
    }
    // The connection is still fine afterwards.
    auto ok = co_await client.call<echo>("still here");
    EXPECT_EQ(ok.value_or(""), "still here");
  }());
}

TEST(api, connect_errors_are_values_not_exceptions) {
  corvid::rpc_client client;
  auto bad = corvid::sync_wait(connect(client, "no-port-here"));
  EXPECT_EQ(bad.code(), corvid::rpc_errc::invalid_argument);
  // Nothing listens on a port we just bound and released.
  std::uint16_t dead_port;
  {
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    dead_port = a.local_endpoint().port();
  }
  auto refused = corvid::sync_wait(connect(client, "127.0.0.1:" + std::to_string(dead_port)));
  EXPECT_EQ(refused.code(), corvid::rpc_errc::connect_failed) << refused.message();
  // A call without a connection fails at once.
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call<echo>("x");
      }());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
}

TEST(api, oversized_request_fails_locally_and_connection_survives) {
  test_server srv;
  corvid::client_config cfg;
  cfg.max_frame_size = 1024;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto r = co_await client.call<echo>(std::string(2000, 'x'));
    EXPECT_FALSE(r.has_value());
    if (!r) {
      EXPECT_EQ(r.error().code(), corvid::rpc_errc::message_too_large);
    }
    auto ok = co_await client.call<echo>("small");
    EXPECT_EQ(ok.value_or(""), "small");
  }());
}

TEST(api, oversized_reply_fails_that_call_only) {
  auto cfg = test_server::make_config();
  cfg.max_frame_size = 1024;
  test_server srv(cfg);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    // A 1012-byte request fits the 1024-byte limit; its reply (the peer address, >= 15 bytes,
    // plus a 1010-byte attachment) does not.
    auto r = co_await client.call_with_attachment<with_context>(std::string(505, 'a'),
                                                                std::string(505, 'b'));
    EXPECT_FALSE(r.has_value());
    if (!r) {
      EXPECT_EQ(r.error().code(), corvid::rpc_errc::message_too_large) << r.error().message();
    }
    auto ok = co_await client.call<echo>("fine");
    EXPECT_EQ(ok.value_or(""), "fine");
  }());
}

TEST(api, reconnect_by_calling_connect_again) {
  test_server first;
  test_server second;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, first.endpoint())));
  second.calc().base = 100;
  first.server().stop();
  ASSERT_FALSE(corvid::sync_wait(connect(client, second.endpoint())));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call<&calculator::plus>(1);
  }());
  EXPECT_EQ(r.value_or(-1), 101);
}

}  // namespace
}  // namespace corvid_test
