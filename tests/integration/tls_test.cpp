// TLS end to end: calls over TLS, mutual TLS, each way a handshake can fail (named on the
// client's error and the server's on_handshake_error), plaintext migration, reload, and TLS
// under pools, load balancing, deadlines, cancellation and heartbeats.
#include <atomic>
#include <filesystem>

#include "tapped_proxy.hpp"
#include "test_certs.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

const corvid::test::test_certs& certs() {
  static const corvid::test::test_certs c;
  return c;
}

// The server's view of failed handshakes, gathered from on_handshake_error.
struct handshake_log {
  std::mutex mutex;
  std::vector<std::string> errors;
  void add(const corvid::rpc_error& e) {
    std::lock_guard lk(mutex);
    errors.push_back(e.message());
  }
  bool saw(std::string_view text) {
    std::lock_guard lk(mutex);
    for (const auto& e : errors) {
      if (e.find(text) != std::string::npos) return true;
    }
    return false;
  }
  std::string all() {
    std::lock_guard lk(mutex);
    std::string out;
    for (const auto& e : errors) out += e + "\n";
    return out;
  }
};

corvid::tls_config server_tls(handshake_log* log = nullptr) {
  corvid::tls_config t{.certificate_chain_file = certs().server_cert,
                       .private_key_file = certs().server_key};
  if (log != nullptr) {
    t.on_handshake_error = [log](std::string_view, const corvid::rpc_error& e) {
      log->add(e);
    };
  }
  return t;
}

// A started server with TLS on (init_tls before start).
class tls_server {
 public:
  explicit tls_server(corvid::tls_config tls,
                      corvid::server_config cfg = test_server::make_config())
      : server_(std::move(cfg)) {
    server_.register_handler<echo, add, sleepy>();
    if (auto e = server_.init_tls(std::move(tls))) throw std::runtime_error(e.message());
    if (auto e = server_.async_start()) throw std::runtime_error(e.message());
  }
  corvid::rpc_server& server() { return server_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  std::string local_endpoint() const { return "localhost:" + std::to_string(server_.port()); }

 private:
  corvid::rpc_server server_;
};

corvid::tls_config client_tls() { return {.ca_file = certs().ca}; }

template <auto F>
using result_t = corvid::expected<corvid::detail::client_result_t<F>, corvid::rpc_error>;

template <auto F, class... Args>
result_t<F> call(corvid::rpc_client& c, Args... args) {
  return corvid::sync_wait([&]() -> corvid::task<result_t<F>> {
    co_return co_await c.call<F>(args...);
  }());
}

template <auto F, class... Args>
result_t<F> call_for(corvid::rpc_client& c, std::chrono::milliseconds t, Args... args) {
  return corvid::sync_wait([&]() -> corvid::task<result_t<F>> {
    co_return co_await c.call_for<F>(t, args...);
  }());
}

corvid::rpc_error connect_with(corvid::rpc_client& c, const std::string& ep) {
  return corvid::sync_wait(connect(c, ep));
}

// A payload no TLS record could contain by chance: found on the wire only if sent in clear.
const std::string plaintext_marker = "corvid plaintext marker: if you can read this, so can they";

TEST(tls, the_wire_tap_sees_a_plaintext_call) {  // the check below can see plaintext at all
  test_server srv;
  corvid::test::tapped_proxy tap(srv.port());
  corvid::rpc_client client;
  ASSERT_FALSE(connect_with(client, "127.0.0.1:" + std::to_string(tap.port())));
  EXPECT_EQ(call<echo>(client, plaintext_marker).value_or(""), plaintext_marker);
  EXPECT_NE(tap.seen().find(plaintext_marker), std::string::npos);
}

TEST(tls, calls_travel_encrypted_and_coalesced) {
  tls_server srv(server_tls());
  // The client talks to the server through a proxy that keeps every byte of the wire.
  corvid::test::tapped_proxy tap(static_cast<std::uint16_t>(srv.server().port()));
  corvid::rpc_client client;
  ASSERT_FALSE(client.init_tls(client_tls()));
  ASSERT_FALSE(connect_with(client, "localhost:" + std::to_string(tap.port())));
  auto r = call<echo>(client, "over tls");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(*r, "over tls");
  auto m = call<echo>(client, plaintext_marker);
  ASSERT_TRUE(m.has_value()) << m.error().message();
  EXPECT_EQ(*m, plaintext_marker);
  const std::string wire = tap.seen();
  EXPECT_GT(wire.size(), 2 * plaintext_marker.size()) << "the calls did not cross the tap";
  EXPECT_EQ(wire.find(plaintext_marker), std::string::npos) << "the payload crossed in clear";
  EXPECT_EQ(wire.find("over tls"), std::string::npos) << "the payload crossed in clear";
  // A big payload crosses many records, both ways.
  const std::string big(3 << 20, 'b');
  auto rb = call<echo>(client, big);
  ASSERT_TRUE(rb.has_value()) << rb.error().message();
  EXPECT_EQ(rb->size(), big.size());
  // 256 pipelined calls leave in far fewer writes than calls.
  const auto before = client.stats();
  corvid::sync_wait([&]() -> corvid::task<void> {
    std::vector<corvid::async_reply_t<add>> pending;
    for (int i = 0; i < 256; ++i) {
      pending.push_back(co_await client.send_request<add>(i, 1));
    }
    for (int i = 0; i < 256; ++i) {
      auto v = co_await std::move(pending[static_cast<std::size_t>(i)]);
      EXPECT_EQ(v.value_or(-1), i + 1);
    }
  }());
  // A write is counted when its completion handler runs, which may come after the replies
  // it carried were read (both were ready at once): wait for the count, not for timing.
  EXPECT_TRUE(eventually([&] { return client.stats().frames_sent - before.frames_sent >= 256; }))
      << client.stats().frames_sent - before.frames_sent << " frames counted as sent";
  const auto after = client.stats();
  EXPECT_LT(after.write_syscalls - before.write_syscalls, 64u) << "requests were not coalesced";
}

TEST(tls, a_wrong_ca_is_named_on_both_sides) {
  handshake_log log;
  tls_server srv(server_tls(&log));
  corvid::rpc_client client;
  ASSERT_FALSE(client.init_tls({.ca_file = certs().other_ca}));
  const auto e = connect_with(client, srv.local_endpoint());
  EXPECT_EQ(e.code(), corvid::rpc_errc::connect_failed);
  EXPECT_NE(e.message().find("certificate verify failed"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("local issuer"), std::string::npos) << e.message();
  // The server sees the client's alert.
  EXPECT_TRUE(eventually([&] { return log.saw("TLS handshake failed"); })) << log.all();
}

TEST(tls, a_server_name_mismatch_is_refused) {
  corvid::rpc_client client;
  tls_server srv(server_tls());
  ASSERT_FALSE(client.init_tls({.ca_file = certs().ca, .server_name = "db.example"}));
  const auto e = connect_with(client, srv.endpoint());
  EXPECT_EQ(e.code(), corvid::rpc_errc::connect_failed);
  EXPECT_NE(e.message().find("hostname mismatch"), std::string::npos) << e.message();

  // A certificate for another name, checked against the host connected to.
  tls_server other({.certificate_chain_file = certs().wrong_name_cert,
                    .private_key_file = certs().wrong_name_key});
  corvid::rpc_client c2;
  ASSERT_FALSE(c2.init_tls(client_tls()));
  const auto e2 = connect_with(c2, other.local_endpoint());
  EXPECT_NE(e2.message().find("hostname mismatch"), std::string::npos) << e2.message();
  // By IP address: the certificate's IP entries count.
  corvid::rpc_client c3;
  ASSERT_FALSE(c3.init_tls(client_tls()));
  EXPECT_FALSE(connect_with(c3, srv.endpoint()));
  corvid::rpc_client c4;
  ASSERT_FALSE(c4.init_tls(client_tls()));
  const auto e4 = connect_with(c4, other.endpoint());
  EXPECT_NE(e4.message().find("mismatch"), std::string::npos) << e4.message();
}

TEST(tls, an_expired_certificate_is_refused) {
  tls_server srv(
      {.certificate_chain_file = certs().expired_cert, .private_key_file = certs().expired_key});
  corvid::rpc_client client;
  ASSERT_FALSE(client.init_tls(client_tls()));
  const auto e = connect_with(client, srv.local_endpoint());
  EXPECT_EQ(e.code(), corvid::rpc_errc::connect_failed);
  EXPECT_NE(e.message().find("certificate has expired"), std::string::npos) << e.message();
}

TEST(tls, mutual_tls_accepts_a_client_certificate_and_refuses_none) {
  handshake_log log;
  auto tls = server_tls(&log);
  tls.ca_file = certs().ca;
  tls.require_client_certificate = true;
  tls_server srv(std::move(tls));

  corvid::rpc_client good;
  ASSERT_FALSE(good.init_tls({.certificate_chain_file = certs().client_cert,
                              .private_key_file = certs().client_key,
                              .ca_file = certs().ca}));
  ASSERT_FALSE(connect_with(good, srv.local_endpoint()));
  EXPECT_EQ(call<add>(good, 2, 3).value_or(0), 5);

  // Without a certificate: under TLS 1.3 the client's handshake ends before the server
  // checks, so the refusal arrives as an alert at the first call.
  corvid::rpc_client none;
  ASSERT_FALSE(none.init_tls(client_tls()));
  auto e = connect_with(none, srv.local_endpoint());
  if (!e) {
    auto r = call<add>(none, 1, 1);
    ASSERT_FALSE(r.has_value());
    e = r.error();
  }
  EXPECT_NE(e.message().find("certificate required"), std::string::npos) << e.message();
  EXPECT_TRUE(eventually([&] { return log.saw("did not return a certificate"); })) << log.all();

  // A certificate from a CA the server does not trust.
  corvid::rpc_client stranger;
  ASSERT_FALSE(stranger.init_tls({.certificate_chain_file = certs().stranger_cert,
                                  .private_key_file = certs().stranger_key,
                                  .ca_file = certs().ca}));
  auto e2 = connect_with(stranger, srv.local_endpoint());
  if (!e2) {
    auto r = call<add>(stranger, 1, 1);
    ASSERT_FALSE(r.has_value());
    e2 = r.error();
  }
  EXPECT_NE(e2.message().find("unknown ca"), std::string::npos) << e2.message();
  EXPECT_TRUE(eventually([&] { return log.saw("certificate verify failed"); })) << log.all();
}

TEST(tls, a_plaintext_client_is_told_the_server_requires_tls) {
  tls_server srv(server_tls());
  corvid::rpc_client plain;
  ASSERT_FALSE(connect_with(plain, srv.endpoint()));
  auto r = call<echo>(plain, "hi");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("requires TLS"), std::string::npos) << r.error().message();
}

TEST(tls, a_tls_client_to_a_plaintext_server_is_told_it_is_not_tls) {
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(client.init_tls(client_tls()));
  const auto e = connect_with(client, srv.endpoint());
  EXPECT_EQ(e.code(), corvid::rpc_errc::connect_failed);
  EXPECT_NE(e.message().find("TLS handshake with"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("is the peer speaking TLS?"), std::string::npos) << e.message();
}

TEST(tls, allow_plaintext_serves_both_on_one_port) {
  auto tls = server_tls();
  tls.allow_plaintext = true;
  tls_server srv(std::move(tls));
  corvid::rpc_client plain, secure;
  ASSERT_FALSE(secure.init_tls(client_tls()));
  ASSERT_FALSE(connect_with(plain, srv.endpoint()));
  ASSERT_FALSE(connect_with(secure, srv.local_endpoint()));
  EXPECT_EQ(call<add>(plain, 1, 2).value_or(0), 3);
  EXPECT_EQ(call<add>(secure, 3, 4).value_or(0), 7);
}

TEST(tls, a_stalled_handshake_is_closed_after_handshake_timeout) {
  handshake_log log;
  auto tls = server_tls(&log);
  tls.handshake_timeout = 200ms;
  tls_server srv(std::move(tls));
  raw_connection raw(srv.server().port());
  raw.send(std::string(1, '\x16'));  // a TLS record begins, and nothing more comes
  EXPECT_TRUE(raw.closed_by_peer());
  EXPECT_TRUE(eventually([&] { return log.saw("no TLS handshake within 200 ms"); })) << log.all();
}

TEST(tls, reload_applies_to_new_connections_and_open_ones_keep_theirs) {
  // The server's files are copies the test rewrites, as a certificate renewal would.
  const std::string cert = certs().write("reload.pem", "");
  const std::string key = certs().write("reload.key", "");
  auto copy = [](const std::string& from, const std::string& to) {
    std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  };
  copy(certs().server_cert, cert);
  copy(certs().server_key, key);
  tls_server srv({.certificate_chain_file = cert, .private_key_file = key});
  corvid::rpc_client before;
  ASSERT_FALSE(before.init_tls(client_tls()));
  ASSERT_FALSE(connect_with(before, srv.local_endpoint()));

  copy(certs().stranger_cert, cert);  // renewed, by another CA
  copy(certs().stranger_key, key);
  ASSERT_FALSE(srv.server().reload_tls());
  corvid::rpc_client after;
  ASSERT_FALSE(after.init_tls(client_tls()));
  const auto e = connect_with(after, srv.local_endpoint());
  EXPECT_NE(e.message().find("certificate verify failed"), std::string::npos) << e.message();
  corvid::rpc_client trusting;
  ASSERT_FALSE(trusting.init_tls({.ca_file = certs().other_ca}));
  EXPECT_FALSE(connect_with(trusting, srv.local_endpoint()));
  EXPECT_EQ(call<add>(before, 1, 1).value_or(0), 2) << "open connection broke";

  // A reload that fails keeps the working files.
  std::filesystem::remove(key);
  const auto bad = srv.server().reload_tls();
  EXPECT_EQ(bad.code(), corvid::rpc_errc::invalid_argument);
  corvid::rpc_client still;
  ASSERT_FALSE(still.init_tls({.ca_file = certs().other_ca}));
  EXPECT_FALSE(connect_with(still, srv.local_endpoint()));
}

TEST(tls, bad_files_fail_init_with_their_name) {
  corvid::rpc_server server(test_server::make_config());
  const auto e = server.init_tls(
      {.certificate_chain_file = certs().server_cert, .private_key_file = "/nonexistent.key"});
  EXPECT_EQ(e.code(), corvid::rpc_errc::invalid_argument);
  EXPECT_NE(e.message().find("/nonexistent.key"), std::string::npos) << e.message();
  corvid::rpc_client client;
  EXPECT_EQ(client.init_tls({.ca_file = "/nonexistent-ca.pem"}).code(),
            corvid::rpc_errc::invalid_argument);
  // Through client_config::tls the files are checked at connect.
  corvid::client_config cc;
  cc.tls = corvid::tls_config{.ca_file = "/nonexistent-ca.pem"};
  corvid::rpc_client configured(cc);
  tls_server srv(server_tls());
  const auto ce = connect_with(configured, srv.local_endpoint());
  EXPECT_EQ(ce.code(), corvid::rpc_errc::invalid_argument);
  EXPECT_NE(ce.message().find("nonexistent-ca.pem"), std::string::npos) << ce.message();
}

TEST(tls, sessions_are_charged_to_the_servers_memory_and_released) {
  tls_server srv(server_tls());
  auto tls_bytes = [&] {
    const auto m = srv.server().memory();
    const auto* n = m.find("tls_sessions");
    return n ? n->current : 0;
  };
  {
    corvid::rpc_client a, b;
    ASSERT_FALSE(a.init_tls(client_tls()));
    ASSERT_FALSE(b.init_tls(client_tls()));
    ASSERT_FALSE(connect_with(a, srv.local_endpoint()));
    ASSERT_FALSE(connect_with(b, srv.local_endpoint()));
    EXPECT_TRUE(eventually([&] { return tls_bytes() >= 2 * 64 * 1024; })) << tls_bytes();
  }
  EXPECT_TRUE(eventually([&] { return tls_bytes() == 0; })) << tls_bytes();
}

TEST(tls, pools_and_load_balancers_use_client_config_tls) {
  tls_server a(server_tls()), b(server_tls());
  corvid::pool_config cfg;
  cfg.max_connections = 2;
  cfg.client.tls = client_tls();
  auto pool = corvid::client_pool::create(a.local_endpoint(), cfg);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(corvid::sync_wait(pool->call<add>(i, 1)).value_or(-1), i + 1);
  }
  corvid::lb_config lb;
  lb.pool = cfg;
  auto balancer = corvid::load_balancer::create({{a.local_endpoint()}, {b.local_endpoint()}}, lb);
  for (int i = 0; i < 20; ++i) {
    auto r = corvid::sync_wait(balancer->call<echo>("x"));
    EXPECT_TRUE(r.has_value()) << r.error().message();
  }
}

TEST(tls, deadlines_cancellation_and_heartbeats_work_over_tls) {
  tls_server srv(server_tls());
  corvid::client_config cc;
  cc.tls = client_tls();
  cc.heartbeat_interval = 50ms;
  cc.heartbeat_timeout = 2000ms;
  corvid::rpc_client client(cc);
  ASSERT_FALSE(connect_with(client, srv.local_endpoint()));
  auto slow = call_for<sleepy>(client, 50ms, 600);
  ASSERT_FALSE(slow.has_value());
  EXPECT_EQ(slow.error().code(), corvid::rpc_errc::timeout);
  // Idle across several heartbeats (waits for their count, not a time): pings and pongs over
  // TLS keep it alive.
  const auto pings = client.stats().pings_sent;
  EXPECT_TRUE(eventually([&] { return client.stats().pings_sent >= pings + 4; }));
  EXPECT_EQ(call<add>(client, 20, 22).value_or(0), 42);
  EXPECT_TRUE(eventually([&] { return srv.server().stats().calls_cancelled >= 1; }));
}

}  // namespace
}  // namespace corvid_test
