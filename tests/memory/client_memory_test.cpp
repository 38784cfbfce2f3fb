// Client-side backpressure: caps on calls in flight and queued request bytes (client_busy).
#include <string>

#include "../integration/test_support.hpp"

namespace corvid_test {
namespace {

TEST(client_memory, calls_past_the_in_flight_cap_fail_with_client_busy) {
  test_server srv;
  corvid::client_config cfg;
  cfg.max_pending_calls = 2;
  corvid::rpc_client client(cfg);
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
}

TEST(client_memory, queued_bytes_cap_refuses_a_request_that_would_pass_it) {
  test_server srv;
  corvid::client_config cfg;
  cfg.max_queued_request_bytes = 1024;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  const std::string big(4096, 'q');
  bool busy = false;
  std::string small;
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto r = co_await client.call_with_attachment<echo>(big, "x");
    busy = !r.has_value() && r.error().code() == corvid::rpc_errc::client_busy;
    auto ok = co_await client.call<echo>("small");
    if (ok) small = *ok;
  }());
  EXPECT_TRUE(busy);
  EXPECT_EQ(small, "small");
}

}  // namespace
}  // namespace corvid_test
