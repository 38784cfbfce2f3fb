// RDMA with TLS: the rdma_setup exchange runs over TLS after the handshake, then the calls
// move to the queue pair. The server is verified (and the client, with mutual TLS) exactly
// as without RDMA; a TLS failure reads as TLS's, a refused setup as RDMA's; connect_timeout
// bounds the whole sequence.
#include <atomic>
#include <thread>

#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>

#include "rdma_support.hpp"
#include "slowdown.hpp"
#include "test_certs.hpp"

namespace corvid_rdma_test {
namespace {

const corvid::test::test_certs& certs() {
  static const corvid::test::test_certs c;
  return c;
}

corvid::tls_config server_tls() {
  return {.certificate_chain_file = certs().server_cert, .private_key_file = certs().server_key};
}
corvid::tls_config client_tls() { return {.ca_file = certs().ca}; }

// A started server with TLS, and RDMA unless `ibv` is empty.
class tls_server {
 public:
  explicit tls_server(corvid::tls_config tls, std::optional<corvid::ibv_config> ibv = test_ibv())
      : server_(server_config()) {
    server_.register_handler<echo, add>();
    if (ibv) {
      if (auto e = server_.init_ibv(*ibv)) throw std::runtime_error("init_ibv: " + e.message());
    }
    if (auto e = server_.init_tls(std::move(tls))) throw std::runtime_error(e.message());
    if (auto e = server_.async_start()) throw std::runtime_error(e.message());
  }
  corvid::rpc_server& server() { return server_; }
  std::string endpoint() const { return "localhost:" + std::to_string(server_.port()); }

 private:
  corvid::rpc_server server_;
};

// Connects `c` with TLS (`tls`) and RDMA on.
corvid::rpc_error connect_both(corvid::rpc_client& c, const std::string& ep,
                               corvid::tls_config tls = client_tls()) {
  if (auto e = c.init_tls(std::move(tls))) return e;
  if (auto e = c.init_ibv(test_ibv())) return e;
  return corvid::sync_wait(connect(c, ep));
}

bool has(const corvid::rpc_error& e, std::string_view text) {
  return e.message().find(text) != std::string::npos;
}

TEST(rdma_tls, calls_travel_over_rdma_after_a_setup_over_tls) {
  tls_server srv(server_tls());
  corvid::rpc_client client;
  const auto ec = connect_both(client, srv.endpoint());
  ASSERT_FALSE(ec) << ec.message();
  auto r = run(client.call<echo>("over rdma, set up over tls"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "over rdma, set up over tls");
  const std::string big = pattern(1 << 20, 3);
  auto rb = run(client.call<echo>(big));
  ASSERT_TRUE(rb) << rb.error().message();
  EXPECT_TRUE(*rb == big);
  // Every frame went over the queue pair: each write was a SEND, both ways.
  const auto c = client.stats();
  const auto s = srv.server().stats();
  EXPECT_EQ(c.frames_sent, 2u);
  EXPECT_GE(c.rdma_sends, 2u);
  EXPECT_EQ(c.write_syscalls, c.rdma_sends);
  EXPECT_GE(c.rdma_receives, 2u);
  EXPECT_GE(s.rdma_receives, 2u);
  EXPECT_EQ(s.write_syscalls, s.rdma_sends + 1);  // and the rdma_setup answer, over TLS
  EXPECT_EQ(c.rdma_errors + s.rdma_errors, 0u);
  // The TLS session was freed at the switch, and so is the memory charged for it.
  const auto mem = srv.server().memory();
  const auto* tls_node = mem.find("tls_sessions");
  ASSERT_NE(tls_node, nullptr);
  EXPECT_EQ(tls_node->current, 0u) << mem.to_string();
  // The side channel, now the bare socket, still tells the server the client left.
  client.close();
  const auto until = std::chrono::steady_clock::now() + corvid::test::patience(5000ms);
  while (srv.server().connection_count() != 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(srv.server().connection_count(), 0u);
}

TEST(rdma_tls, allow_plaintext_takes_plaintext_and_tls_rdma_setups_on_one_port) {
  auto tls = server_tls();
  tls.allow_plaintext = true;
  tls_server srv(std::move(tls));
  corvid::rpc_client plain, secure;
  connect_rdma(plain, srv.endpoint());
  const auto ec = connect_both(secure, srv.endpoint());
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(run(plain.call<add>(1, 2)).value_or(0), 3);
  EXPECT_EQ(run(secure.call<add>(3, 4)).value_or(0), 7);
  EXPECT_GT(plain.stats().rdma_sends, 0u);
  EXPECT_GT(secure.stats().rdma_sends, 0u);
}

TEST(rdma_tls, mutual_tls_refuses_a_client_without_a_certificate_naming_tls) {
  auto tls = server_tls();
  tls.ca_file = certs().ca;
  tls.require_client_certificate = true;
  tls_server srv(std::move(tls));

  corvid::rpc_client good;
  const auto ok = connect_both(good, srv.endpoint(),
                               {.certificate_chain_file = certs().client_cert,
                                .private_key_file = certs().client_key,
                                .ca_file = certs().ca});
  ASSERT_FALSE(ok) << ok.message();
  EXPECT_EQ(run(good.call<add>(2, 3)).value_or(0), 5);
  EXPECT_GT(good.stats().rdma_sends, 0u);

  // Under TLS 1.3 the client's handshake ends before the server checks: the refusal is the
  // server's alert, which arrives instead of the answer to rdma_setup.
  corvid::rpc_client none;
  const auto e = connect_both(none, srv.endpoint());
  ASSERT_TRUE(e);
  EXPECT_EQ(e.code(), corvid::rpc_errc::connect_failed) << e.message();
  EXPECT_TRUE(has(e, "TLS")) << e.message();
  EXPECT_TRUE(has(e, "certificate required")) << e.message();
  EXPECT_FALSE(none.is_connected());
}

TEST(rdma_tls, a_wrong_ca_is_a_tls_verification_error_not_an_rdma_one) {
  tls_server srv(server_tls());
  corvid::rpc_client client;
  const auto e = connect_both(client, srv.endpoint(), {.ca_file = certs().other_ca});
  ASSERT_TRUE(e);
  EXPECT_EQ(e.code(), corvid::rpc_errc::connect_failed) << e.message();
  EXPECT_TRUE(has(e, "TLS handshake with")) << e.message();
  EXPECT_TRUE(has(e, "certificate verify failed")) << e.message();
  EXPECT_FALSE(has(e, "RDMA")) << e.message();
  EXPECT_EQ(srv.server().stats().rdma_receives, 0u);
}

TEST(rdma_tls, a_tls_server_without_rdma_says_so) {
  tls_server srv(server_tls(), std::nullopt);
  corvid::rpc_client client;
  const auto e = connect_both(client, srv.endpoint());
  ASSERT_TRUE(e);
  EXPECT_TRUE(has(e, "RDMA is not enabled on this server")) << e.message();
  EXPECT_TRUE(has(e, "init_ibv")) << e.message();
  EXPECT_FALSE(client.is_connected());
}

TEST(rdma_tls, a_plaintext_rdma_client_is_told_the_server_requires_tls) {
  for (const bool with_ibv : {true, false}) {
    tls_server srv(server_tls(), with_ibv ? std::optional(test_ibv()) : std::nullopt);
    corvid::rpc_client client;
    ASSERT_FALSE(client.init_ibv(test_ibv()));
    const auto e = corvid::sync_wait(connect(client, srv.endpoint()));
    ASSERT_TRUE(e) << "with_ibv " << with_ibv;
    EXPECT_TRUE(has(e, "this server requires TLS")) << e.message();
  }
}

// A TLS server that completes the handshake, then never answers: the RDMA setup must end
// at connect_timeout, which counts from the connect, not from the handshake's end.
TEST(rdma_tls, connect_timeout_bounds_a_setup_left_unanswered_after_tls) {
  asio::io_context io;
  asio::ssl::context ctx(asio::ssl::context::tls_server);
  ctx.use_certificate_chain_file(certs().server_cert);
  ctx.use_private_key_file(certs().server_key, asio::ssl::context::pem);
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ssl::stream<asio::ip::tcp::socket> peer(io, ctx);
  std::atomic<bool> handshaken = false;
  char byte = 0;
  acceptor.async_accept(peer.next_layer(), [&](const std::error_code& ec) {
    if (ec) return;
    peer.async_handshake(asio::ssl::stream_base::server, [&](const std::error_code& e) {
      if (e) return;
      handshaken = true;
      peer.async_read_some(asio::buffer(&byte, 1), [](const std::error_code&, std::size_t) {});
    });
  });
  std::thread runner([&] { io.run(); });

  corvid::client_config cfg;
  cfg.connect_timeout = corvid::test::patience(500ms);
  corvid::rpc_client client(cfg);
  const auto started = std::chrono::steady_clock::now();
  const auto e =
      connect_both(client, "localhost:" + std::to_string(acceptor.local_endpoint().port()));
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(e);
  EXPECT_EQ(e.code(), corvid::rpc_errc::timeout) << e.message();
  EXPECT_TRUE(has(e, "RDMA setup")) << e.message();
  EXPECT_TRUE(handshaken);
  EXPECT_LT(took, cfg.connect_timeout + corvid::test::patience(2000ms));
  io.stop();
  runner.join();
}

}  // namespace
}  // namespace corvid_rdma_test
