// Call metadata, identity, interceptors and the authorization policy over mutual TLS, and over
// RDMA (softverbs) whose setup connection is mutual TLS: what call_metadata_e2e_test,
// interceptor_test and authorization_test check over TCP and Unix sockets. The clients hold
// the certificate with a SPIFFE id (test_certs::san_client_cert), one without
// (test_certs::client_cert), or none.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "corvid/client/bearer_token.hpp"

#include "../support/stream_handlers.hpp"
#include "server_test_support.hpp"
#include "test_certs.hpp"
#include "test_provider.hpp"

namespace {

// Answers "<s>:<tenant>:<the caller's first URI SAN>" and replies with "served-by: a1".
std::string greet(corvid::request_context& ctx, std::string s) {
  ctx.response_metadata().add("served-by", "a1");
  const auto& uris = ctx.identity().uris;
  return s + ":" + std::string(ctx.metadata().find("tenant").value_or("-")) + ":" +
         (uris.empty() ? std::string("-") : uris.front());
}
std::atomic<int> secret_runs{0};
std::string secret(std::string s) {
  ++secret_runs;
  return "secret " + s;
}

}  // namespace

namespace corvid_server_test {
namespace {

using corvid::call_info;
using corvid::call_verdict;
using corvid::principals;
using corvid::rpc_errc;
using corvid::test::test_certs;
using md_result = corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>;

const test_certs& certs() {
  static const test_certs c;
  return c;
}

enum class cert { spiffe, other, none };

const std::string prod_uri = test_certs::san_client_uri;  // spiffe://example.org/ns/prod/sa/alice

// One server per test over mutual TLS (asking for a client certificate, not requiring one),
// with RDMA on top when the parameter says so.
class AuthTransports : public ::testing::TestWithParam<bool> {  // true: RDMA
 protected:
  void SetUp() override { secret_runs = 0; }

  void start() {
    server_.register_handler<greet, secret>();
    corvid_test::streams::register_all(server_);
    if (GetParam()) {
      ASSERT_FALSE(server_.init_ibv(corvid_rdma_test::test_ibv()));
    }
    ASSERT_FALSE(server_.init_tls({.certificate_chain_file = certs().server_cert,
                                   .private_key_file = certs().server_key,
                                   .ca_file = certs().ca}));
    ASSERT_FALSE(server_.async_start());
  }

  std::unique_ptr<corvid::rpc_client> client(cert who, corvid::client_config cfg = {}) {
    auto c = std::make_unique<corvid::rpc_client>(std::move(cfg));
    corvid::tls_config tls{.ca_file = certs().ca};
    if (who == cert::spiffe) {
      tls.certificate_chain_file = certs().san_client_cert;
      tls.private_key_file = certs().san_client_key;
    } else if (who == cert::other) {
      tls.certificate_chain_file = certs().client_cert;
      tls.private_key_file = certs().client_key;
    }
    EXPECT_FALSE(c->init_tls(std::move(tls)));
    if (GetParam()) {
      EXPECT_FALSE(c->init_ibv(corvid_rdma_test::test_ibv()));
    }
    auto ec =
        corvid::sync_wait(corvid::test::connect(*c, "localhost:" + std::to_string(server_.port())));
    EXPECT_FALSE(ec) << ec.message();
    return c;
  }

  // Calls F with `md` (if any), keeping the reply's metadata in `reply` (if given).
  template <auto F>
  static md_result call_md(corvid::rpc_client& c, std::string arg, const corvid::metadata* md,
                           corvid::metadata* reply = nullptr) {
    corvid::call_options o;
    o.metadata = md;
    o.reply_metadata = reply;
    return corvid::sync_wait([&]() -> corvid::task<md_result> {
      co_return co_await c.call_with<F>(o, arg);
    }());
  }

  // The calls went over the queue pair, not the TLS connection, when RDMA is on.
  void expect_transport(const corvid::rpc_client& c) {
    if (GetParam()) {
      EXPECT_GT(c.stats().rdma_sends, 0u);
    }
  }

  corvid::rpc_server server_{loopback_config()};
};

// ---- metadata and identity

// What an interceptor saw of a call: its identity's URIs and its metadata.
struct seen_call {
  std::mutex mutex;
  std::vector<std::string> uris;
  std::optional<std::string> tenant;
};

TEST_P(AuthTransports, MetadataGoesBothWaysAndTheIdentityIsTheClientCertificate) {
  auto seen = std::make_shared<seen_call>();
  server_.add_interceptor([seen](const call_info& c) {
    std::lock_guard lk(seen->mutex);
    seen->uris = c.identity->uris;
    if (auto t = c.metadata.find("tenant")) seen->tenant = std::string(*t);
    return call_verdict::proceed();
  });
  start();
  auto c = client(cert::spiffe);
  const corvid::metadata md{{"tenant", "acme"}};
  corvid::metadata reply;
  auto r = call_md<greet>(*c, "hi", &md, &reply);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->value, "hi:acme:" + prod_uri);
  EXPECT_EQ(reply, (corvid::metadata{{"served-by", "a1"}}));
  {
    std::lock_guard lk(seen->mutex);
    EXPECT_EQ(seen->uris, std::vector<std::string>{prod_uri});
    EXPECT_EQ(seen->tenant, "acme");
  }
  // A client interceptor's metadata arrives too; a caller without a certificate has no URIs.
  struct tenant_tag : corvid::client_interceptor {
    corvid::rpc_error on_call(corvid::outgoing_call& call) override {
      call.metadata().add("tenant", "globex");
      return {};
    }
  };
  corvid::client_config cfg;
  cfg.interceptors.push_back(std::make_shared<tenant_tag>());
  auto anonymous = client(cert::none, cfg);
  auto a = call_md<greet>(*anonymous, "yo", nullptr);
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_EQ(a->value, "yo:globex:-");
  expect_transport(*c);
  expect_transport(*anonymous);
}

// ---- interceptors

// Refuses calls of `secret` that carry no "ticket" metadata, answering from a coroutine.
struct ticket_check : corvid::async_server_interceptor {
  corvid::task<call_verdict> on_call(const call_info& c) override {
    ++calls;
    if (c.method == corvid::protocol::function_name<secret>() && !c.metadata.find("ticket"))
      co_return call_verdict::refuse(rpc_errc::unauthenticated, "no ticket");
    co_return call_verdict::proceed();
  }
  std::atomic<int> calls{0};
};

TEST_P(AuthTransports, InterceptorsRefuseInOrderAndAThrowIsInternal) {
  server_.add_interceptor([](const call_info& c) -> call_verdict {
    if (c.metadata.find("boom")) throw std::runtime_error("boom");
    if (c.identity->uris.empty() && c.method == corvid::protocol::function_name<greet>())
      return call_verdict::refuse(rpc_errc::permission_denied, "greet needs a SPIFFE id");
    return call_verdict::proceed();
  });
  auto tickets = std::make_shared<ticket_check>();
  server_.add_interceptor(tickets);
  start();
  auto c = client(cert::spiffe);
  auto r = call_md<secret>(*c, "a", nullptr);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), rpc_errc::unauthenticated);
  EXPECT_EQ(r.error().message(), "no ticket");
  const corvid::metadata ticket{{"ticket", "1"}};
  auto ok = call_md<secret>(*c, "b", &ticket);
  ASSERT_TRUE(ok.has_value()) << ok.error().message();
  EXPECT_EQ(ok->value, "secret b");
  EXPECT_EQ(secret_runs, 1);
  const corvid::metadata boom{{"boom", "1"}};
  auto thrown = call_md<secret>(*c, "c", &boom);
  ASSERT_FALSE(thrown.has_value());
  EXPECT_EQ(thrown.error().code(), rpc_errc::internal);
  EXPECT_EQ(thrown.error().message(), "interceptor threw: boom");
  EXPECT_EQ(tickets->calls, 2);  // the first refusal (or throw) ends the chain
  // The certificate decides: the same call from another certificate is refused.
  auto other = client(cert::other);
  auto denied = call_md<greet>(*other, "d", nullptr);
  ASSERT_FALSE(denied.has_value());
  EXPECT_EQ(denied.error().code(), rpc_errc::permission_denied);
  EXPECT_EQ(denied.error().message(), "greet needs a SPIFFE id");
  EXPECT_EQ(tickets->calls, 2);
  ASSERT_TRUE(call_md<greet>(*c, "e", nullptr).has_value());
  expect_transport(*c);
}

TEST_P(AuthTransports, AnInterceptorRefusesAStreamAtItsOpen) {
  server_.add_interceptor([](const call_info& c) {
    return c.stream && c.identity->uris.empty()
               ? call_verdict::refuse(rpc_errc::permission_denied, "no streams for strangers")
               : call_verdict::proceed();
  });
  start();
  auto stranger = client(cert::other);
  auto [items, err] = corvid::sync_wait(corvid_test::streams::read_count(*stranger, 3));
  EXPECT_TRUE(items.empty());
  EXPECT_EQ(err.code(), rpc_errc::permission_denied);
  EXPECT_EQ(err.message(), "no streams for strangers");
  EXPECT_EQ(call<corvid_test::streams::twice>(*stranger, 4).value(), 8);  // the connection goes on
  auto known = client(cert::spiffe);
  auto [got, ok] = corvid::sync_wait(corvid_test::streams::read_count(*known, 3));
  EXPECT_FALSE(ok) << ok.message();
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3}));
}

// ---- the authorization policy

void install_policy(corvid::rpc_server& server) {
  auto policy = std::make_shared<corvid::authorization_policy>();
  policy->allow(std::string(corvid::protocol::function_name<greet>()),
                principals().uri("spiffe://example.org/ns/prod/*"));
  policy->allow(std::string(corvid::protocol::function_name<secret>()),
                principals().bearer_token("s3cret"));
  server.add_interceptor(policy);
}

TEST_P(AuthTransports, ThePolicyAdmitsTheSpiffeIdsItAllowsAndNoOneElse) {
  install_policy(server_);
  start();
  auto prod = client(cert::spiffe);
  auto r = call_md<greet>(*prod, "hi", nullptr);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->value, "hi:-:" + prod_uri);
  // A certificate without that URI proved who it is, and is not allowed.
  auto other = client(cert::other);
  auto denied = call_md<greet>(*other, "hi", nullptr);
  ASSERT_FALSE(denied.has_value());
  EXPECT_EQ(denied.error().code(), rpc_errc::permission_denied);
  // No certificate: nobody proved anything.
  auto anonymous = client(cert::none);
  auto unknown = call_md<greet>(*anonymous, "hi", nullptr);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), rpc_errc::unauthenticated);
  // secret wants the token, which the SPIFFE id does not replace.
  auto no_token = call_md<secret>(*prod, "x", nullptr);
  ASSERT_FALSE(no_token.has_value());
  EXPECT_EQ(no_token.error().code(), rpc_errc::permission_denied);
  EXPECT_EQ(secret_runs, 0);
  expect_transport(*prod);
}

TEST_P(AuthTransports, ThePolicyAdmitsABearerTokenFromAProviderOrTheCallsMetadata) {
  install_policy(server_);
  start();
  corvid::client_config cfg;
  cfg.interceptors.push_back(std::make_shared<corvid::bearer_token_provider>([] {
    return corvid::bearer_token{"s3cret", std::chrono::hours(1)};
  }));
  auto with_provider = client(cert::none, cfg);
  auto r = call_md<secret>(*with_provider, "a", nullptr);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->value, "secret a");
  // The token admits to secret only: greet still wants a SPIFFE id the connection lacks.
  EXPECT_EQ(call_md<greet>(*with_provider, "b", nullptr).error().code(), rpc_errc::unauthenticated);

  auto anonymous = client(cert::none);
  const corvid::metadata good{{"authorization", "Bearer s3cret"}};
  auto by_hand = call_md<secret>(*anonymous, "c", &good);
  ASSERT_TRUE(by_hand.has_value()) << by_hand.error().message();
  const corvid::metadata bad{{"authorization", "Bearer guess"}};
  auto guessed = call_md<secret>(*anonymous, "d", &bad);
  ASSERT_FALSE(guessed.has_value());
  EXPECT_EQ(guessed.error().code(), rpc_errc::unauthenticated);
  EXPECT_EQ(guessed.error().message(),
            "no credential this server accepts for this method came with the call");
  // A caller with a certificate and a wrong token proved who it is: permission_denied.
  auto other = client(cert::other);
  EXPECT_EQ(call_md<secret>(*other, "e", &bad).error().code(), rpc_errc::permission_denied);
  EXPECT_EQ(secret_runs, 2);
  expect_transport(*with_provider);
}

INSTANTIATE_TEST_SUITE_P(mutual_tls, AuthTransports, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "rdma" : "tls"; });

}  // namespace
}  // namespace corvid_server_test
