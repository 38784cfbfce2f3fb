// The authorization policy (server/authorization.hpp): which callers match which principals,
// deny by default, unauthenticated versus permission_denied; and the policy on a real server
// over a Unix socket, where the caller's uid is its identity.
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "server_test_support.hpp"

namespace {
std::string whoami(corvid::request_context& ctx) { return ctx.identity().describe(); }
std::string ping_me(std::string s) { return s; }
}  // namespace

namespace corvid_server_test {
namespace {

using corvid::call_info;
using corvid::peer_identity;
using corvid::principals;
using corvid::rpc_errc;

peer_identity workload() {
  peer_identity id;
  id.has_certificate = true;
  id.subject = "CN=api,O=example";
  id.dns_names = {"api.prod.example.org"};
  id.uris = {"spiffe://example.org/ns/prod/sa/api"};
  id.ip_addresses = {"10.0.0.7"};
  id.fingerprint_sha256 = std::string(64, 'a');
  return id;
}

call_info info(const peer_identity& id, std::string_view method = "inventory::get",
               corvid::metadata_view md = {}) {
  call_info c;
  c.method = method;
  c.identity = &id;
  c.metadata = md;
  return c;
}

TEST(Principals, MatchEachKindOfIdentity) {
  const peer_identity id = workload();
  EXPECT_TRUE(principals().uri("spiffe://example.org/ns/prod/*").matches(info(id)));
  EXPECT_FALSE(principals().uri("spiffe://example.org/ns/dev/*").matches(info(id)));
  EXPECT_TRUE(principals().dns_name("*.example.org").matches(info(id)));
  EXPECT_TRUE(principals().dns_name("API.prod.example.org").matches(info(id)));
  EXPECT_FALSE(principals().dns_name("*.other.org").matches(info(id)));
  EXPECT_TRUE(principals().subject("CN=api,*").matches(info(id)));
  EXPECT_FALSE(principals().subject("CN=apix").matches(info(id)));
  EXPECT_TRUE(principals().ip_address("10.0.0.7").matches(info(id)));
  EXPECT_FALSE(principals().ip_address("10.0.0.70").matches(info(id)));
  EXPECT_TRUE(principals().fingerprint(std::string(64, 'a')).matches(info(id)));
  EXPECT_TRUE(principals::authenticated().matches(info(id)));
  const peer_identity none;
  EXPECT_FALSE(principals::authenticated().matches(info(none)));
  EXPECT_TRUE(principals::anyone().matches(info(none)));
  // "*.example.org" is not "example.org" itself.
  peer_identity apex;
  apex.dns_names = {"example.org"};
  EXPECT_FALSE(principals().dns_name("*.example.org").matches(info(apex)));
}

TEST(Principals, MatchUnixCredentialsAndBearerTokens) {
  peer_identity local;
  local.unix_peer = corvid::unix_peer_credentials{1000, 100, 42};
  EXPECT_TRUE(principals().unix_uid(1000).matches(info(local)));
  EXPECT_FALSE(principals().unix_uid(0).matches(info(local)));
  EXPECT_TRUE(principals().unix_gid(100).matches(info(local)));
  // A bearer token travels as metadata: the view a server hands on covers the entries.
  const std::string entries =
      std::string(1, '\x0d') + "authorization" + std::string("\x0d\0\0\0", 4) + "Bearer s3cret";
  const corvid::metadata_view view(entries, 1);
  const peer_identity none;
  EXPECT_TRUE(principals().bearer_token("s3cret").matches(info(none, "m", view)));
  EXPECT_FALSE(principals().bearer_token("s3cre").matches(info(none, "m", view)));
  EXPECT_FALSE(principals().bearer_token("s3cret").matches(info(none, "m")));
}

TEST(AuthorizationPolicy, DeniesByDefaultAndSaysWhy) {
  corvid::authorization_policy policy;
  policy.allow("inventory::*", principals().uri("spiffe://example.org/ns/prod/*"))
      .allow("health::check", principals::anyone());
  const peer_identity prod = workload();
  peer_identity dev = workload();
  dev.uris = {"spiffe://example.org/ns/dev/sa/api"};
  const peer_identity none;
  EXPECT_TRUE(policy.on_call(info(prod, "inventory::get")).proceeds());
  EXPECT_TRUE(policy.on_call(info(none, "health::check")).proceeds());
  auto v = policy.on_call(info(dev, "inventory::get"));
  EXPECT_EQ(v.code(), rpc_errc::permission_denied);
  v = policy.on_call(info(none, "inventory::get"));
  EXPECT_EQ(v.code(), rpc_errc::unauthenticated);
  v = policy.on_call(info(prod, "billing::charge"));  // no rule names it
  EXPECT_EQ(v.code(), rpc_errc::permission_denied);
  EXPECT_EQ(v.message(), "the authorization policy allows no caller to call this method");
}

TEST(AuthorizationPolicy, PatternsAreExactOrPrefixes) {
  EXPECT_TRUE(corvid::pattern_matches("*", "anything"));
  EXPECT_TRUE(corvid::pattern_matches("a::*", "a::b"));
  EXPECT_FALSE(corvid::pattern_matches("a::*", "ab::c"));
  EXPECT_TRUE(corvid::pattern_matches("a::b", "a::b"));
  EXPECT_FALSE(corvid::pattern_matches("a::b", "a::bc"));
}

// Over a Unix socket the caller's uid is its identity: the policy admits this process's
// user to whoami and nobody to ping_me.
TEST(AuthorizationPolicy, OnARealServerTheUnixPeersUidDecides) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("corvid-authz-" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove(path);
  corvid::server_config cfg = loopback_config();
  cfg.address = "unix:" + path;
  corvid::rpc_server server(cfg);
  server.register_handler<whoami, ping_me>();
  auto policy = std::make_shared<corvid::authorization_policy>();
  policy->allow(std::string(corvid::protocol::function_name<whoami>()),
                principals().unix_uid(static_cast<std::uint32_t>(::getuid())));
  policy->allow(std::string(corvid::protocol::function_name<ping_me>()),
                principals().unix_uid(static_cast<std::uint32_t>(::getuid()) + 1));
  server.add_interceptor(policy);
  ASSERT_FALSE(server.async_start());
  corvid::rpc_client client;
  auto ec = corvid::sync_wait(corvid::test::connect(client, "unix:" + path));
  ASSERT_FALSE(ec) << ec.message();
  auto me = call<whoami>(client);
  ASSERT_TRUE(me.has_value()) << me.error().message();
  EXPECT_NE(me->find("uid=" + std::to_string(::getuid())), std::string::npos) << *me;
  auto denied = call<ping_me>(client, std::string("x"));
  ASSERT_FALSE(denied.has_value());
  EXPECT_EQ(denied.error().code(), rpc_errc::permission_denied);
  server.stop();
  std::filesystem::remove(path);
}

// Over plaintext TCP nobody is authenticated: a method that needs an identity answers
// unauthenticated.
TEST(AuthorizationPolicy, OverPlaintextTcpACallerIsUnauthenticated) {
  corvid::rpc_server server(loopback_config());
  server.register_handler<whoami>();
  auto policy = std::make_shared<corvid::authorization_policy>();
  policy->allow("*", principals::authenticated());
  server.add_interceptor(policy);
  ASSERT_FALSE(server.async_start());
  corvid::rpc_client client;
  connect(client, server);
  auto r = call<whoami>(client);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), rpc_errc::unauthenticated);
  server.stop();
}

}  // namespace
}  // namespace corvid_server_test
