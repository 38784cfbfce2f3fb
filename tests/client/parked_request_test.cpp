// A request that waited for room (client_config::max_pending_calls, when_busy = wait) leaves
// as the request it would have been at once: built by the protocol's request builder when it
// is admitted, with its trace context and what is left of its deadline.
#include <chrono>
#include <optional>
#include <string>

#include "../integration/test_support.hpp"

namespace corvid_test {
namespace {

// "<trace id> <parent span id> <ms left, -1: no deadline>" as the handler sees its request.
std::string seen(corvid::request_context& ctx) {
  if (ctx.trace() == nullptr) return "untraced";
  std::string out = ctx.trace()->traceparent().substr(3, 32);
  corvid::trace_context parent = *ctx.trace();
  parent.span_id = ctx.parent_span_id();
  out += " " + parent.traceparent().substr(36, 16);
  const auto deadline = ctx.deadline();
  out += deadline ? " " + std::to_string(std::chrono::ceil<std::chrono::milliseconds>(
                                             *deadline - std::chrono::steady_clock::now())
                                             .count())
                  : " -1";  // no deadline
  return out;
}

TEST(parked_request, leaves_with_its_trace_and_what_is_left_of_its_deadline) {
  corvid::rpc_server server(test_server::make_config());
  server.register_handler<sleepy, seen>();
  ASSERT_FALSE(server.async_start());
  corvid::client_config cfg;
  cfg.max_pending_calls = 1;
  cfg.when_busy = corvid::client_config::busy_policy::wait;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, "127.0.0.1:" + std::to_string(server.port()))));
  const corvid::trace_context t = corvid::trace_context::new_trace();
  const std::string trace_id = t.traceparent().substr(3, 32);
  const std::string span_id = t.traceparent().substr(36, 16);
  corvid::sync_wait([&]() -> corvid::task<void> {
    auto first = co_await client.send_request<sleepy>(100);  // holds the one place
    auto parked = co_await client.send_request_with<seen>(corvid::call_options{
        .timeout = std::chrono::milliseconds(60000), .attachment = {}, .trace = &t});
    EXPECT_TRUE(first.ready()) << "admitted before the first call made room";
    auto r = co_await std::move(parked);
    EXPECT_EQ((co_await std::move(first)).value_or(-1), 100);
    if (!r) {
      ADD_FAILURE() << r.error().message();
      co_return;
    }
    const std::string& got = r->value;
    if (got.size() <= 50) {
      ADD_FAILURE() << got;
      co_return;
    }
    EXPECT_EQ(got.substr(0, 32), trace_id);
    EXPECT_EQ(got.substr(33, 16), span_id);
    const long left = std::stol(got.substr(50));
    EXPECT_GT(left, 0);
    EXPECT_LE(left, 60000);
  }());
  EXPECT_EQ(client.stats().calls_waited, 1u);
}

}  // namespace
}  // namespace corvid_test
