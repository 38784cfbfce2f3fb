// Call metadata end to end, over TCP and a Unix-domain socket: what a caller sends reaches
// request_context::metadata(), what the handler puts in response_metadata() comes back in
// call_options::reply_metadata, also through a client_pool whose bearer_token_provider adds
// the caller's token, and through a load_balancer.
#include <chrono>
#include <memory>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "corvid/client/bearer_token.hpp"
#include "corvid/client/client_pool.hpp"
#include "corvid/client/lb_hedged_call.hpp"
#include "corvid/client/load_balancer.hpp"
#include "corvid/client/pooled_call.hpp"
#include "corvid/client/rpc_client.hpp"
#include "corvid/server/rpc_server.hpp"
#include "corvid/sync_wait.hpp"

// The balancers' health watches and first connects end before the process exits (their
// coroutine frames would leak otherwise: LeakSanitizer saw one).
#include "background_quiet.hpp"

// Answers "<s>:<tenant>:<authorization>" and replies with "served-by: a1".
inline std::string whoami(corvid::request_context& ctx, std::string s) {
  ctx.response_metadata().add("served-by", "a1");
  const auto tenant = ctx.metadata().find("tenant");
  const auto auth = ctx.metadata().find("authorization");
  return s + ":" + std::string(tenant.value_or("-")) + ":" + std::string(auth.value_or("-"));
}

namespace corvid::test {
namespace {

using namespace std::chrono_literals;

class call_metadata_e2e : public ::testing::TestWithParam<bool> {  // true: over UDS
 protected:
  void SetUp() override {
    server_config c;
    c.io_threads = 1;
    if (GetParam()) {
      path_ = "/tmp/corvid-md-" + std::to_string(::getpid()) + ".sock";
      c.address = "unix:" + path_;
    } else {
      c.address = "127.0.0.1";
    }
    server_ = std::make_unique<rpc_server>(c);
    server_->register_handler<whoami>();
    ASSERT_FALSE(server_->async_start());
    endpoint_ = GetParam() ? "unix:" + path_ : "127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override { server_.reset(); }

  std::string path_, endpoint_;
  std::unique_ptr<rpc_server> server_;
};

TEST_P(call_metadata_e2e, request_and_reply_metadata) {
  rpc_client client;
  ASSERT_FALSE(sync_wait(client.connect(endpoint_)));
  const metadata md{{"tenant", "acme"}};
  metadata got;
  call_options o;
  o.metadata = &md;
  o.reply_metadata = &got;
  auto r = sync_wait(client.call_with<whoami>(o, "hi"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->value, "hi:acme:-");
  EXPECT_EQ(got, (metadata{{"served-by", "a1"}}));
  // A call without metadata sees none, and leaves reply_metadata untouched when not asked.
  auto plain = sync_wait(client.call<whoami>("hi"));
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(*plain, "hi:-:-");
}

TEST_P(call_metadata_e2e, through_a_pool_with_a_bearer_token) {
  pool_config pc;
  pc.client.interceptors = {std::make_shared<bearer_token_provider>([] {
    return bearer_token{"t", std::chrono::hours(1)};
  })};
  auto pool = client_pool::create(endpoint_, pc);
  metadata got;
  auto r = sync_wait([&]() -> task<expected<with_attachment<std::string>, rpc_error>> {
    const metadata md{{"tenant", "acme"}};
    call_options o;
    o.metadata = &md;
    o.reply_metadata = &got;
    co_return co_await pool->call_with<whoami>(o, std::string("hi"));
  }());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->value, "hi:acme:Bearer t");
  EXPECT_EQ(got, (metadata{{"served-by", "a1"}}));
}

// Through a load_balancer, routed plainly and hedged (the hedged path keeps its own copies of
// the metadata: its copies may start after the caller's frame is gone).
TEST_P(call_metadata_e2e, through_a_load_balancer) {
  for (const bool hedged : {false, true}) {
    lb_config config;
    if (hedged) {
      config.methods.set(
          std::string(protocol::function_name_v<whoami>),
          {.idempotent = true, .hedging = hedging_policy{.max_copies = 2, .delay = 1ms}});
    }
    auto lb = load_balancer::create({{.address = endpoint_}}, config);
    metadata got;
    auto r = sync_wait([&]() -> task<expected<with_attachment<std::string>, rpc_error>> {
      const metadata md{{"tenant", "acme"}};
      call_options o;
      o.metadata = &md;
      o.reply_metadata = &got;
      co_return co_await lb->call_with<whoami>(o, std::string("hi"));
    }());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->value, "hi:acme:-") << hedged;
    EXPECT_EQ(got, (metadata{{"served-by", "a1"}})) << hedged;
  }
}

INSTANTIATE_TEST_SUITE_P(transports, call_metadata_e2e, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "uds" : "tcp"; });

}  // namespace
}  // namespace corvid::test
