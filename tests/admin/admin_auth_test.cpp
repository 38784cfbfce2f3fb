// Who may read the admin pages: server_config::admin_bearer_token (401 without the token, on
// both the RPC port's http_admin and admin_address) and admin_require_client_certificate
// (HTTPS on admin_address with a verified client certificate; 403 otherwise; start fails
// when no admin request could ever satisfy it). Real HTTP(S) requests over loopback.
#include <memory>
#include <unistd.h>

#include "http_client.hpp"
#include "test_certs.hpp"
#include "test_support.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>

namespace corvid_test {
namespace {

const corvid::test::test_certs& certs() {
  static const corvid::test::test_certs c;
  return c;
}

std::unique_ptr<corvid::rpc_server> started(corvid::server_config cfg,
                                            std::optional<corvid::tls_config> tls = {}) {
  auto s = std::make_unique<corvid::rpc_server>(std::move(cfg));
  if (tls) {
    if (auto e = s->init_tls(std::move(*tls))) throw std::runtime_error(e.message());
  }
  if (auto e = s->async_start()) throw std::runtime_error(e.message());
  return s;
}

std::string get_with(std::uint16_t port, const std::string& path, const std::string& headers) {
  http_socket s(port);
  s.send("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + headers + "\r\n");
  return s.read_all();
}

bool has_bearer_challenge(const std::string& response) {
  return response.find("\r\nWWW-Authenticate: Bearer\r\n") != std::string::npos;
}

// One HTTPS GET with OpenSSL on a blocking socket; the client certificate when `cert` is set.
// Empty when the handshake fails.
std::string https_get(std::uint16_t port, const std::string& path, const std::string& cert,
                      const std::string& key, const std::string& headers = "") {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  SSL_CTX_load_verify_locations(ctx.get(), certs().ca.c_str(), nullptr);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (!cert.empty()) {
    SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str());
    SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM);
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    SSL* ssl = SSL_new(ctx.get());
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
      const std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + headers + "\r\n";
      SSL_write(ssl, req.data(), static_cast<int>(req.size()));
      char buf[4096];
      for (;;) {
        const int n = SSL_read(ssl, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
      }
    }
    SSL_free(ssl);
  }
  ::close(fd);
  ERR_clear_error();
  return out;
}

corvid::tls_config mutual_tls() {
  return {.certificate_chain_file = certs().server_cert,
          .private_key_file = certs().server_key,
          .ca_file = certs().ca};
}

corvid::server_config https_admin_config() {
  auto cfg = test_server::make_config();
  cfg.admin_address = "127.0.0.1:0";
  cfg.http_admin = true;
  cfg.admin_require_client_certificate = true;
  return cfg;
}

TEST(admin_auth, bearer_token_is_required_on_both_listeners) {
  auto cfg = test_server::make_config();
  cfg.http_admin = true;
  cfg.admin_address = "127.0.0.1:0";
  cfg.admin_bearer_token = "s3cret-token";
  auto srv = started(cfg);
  for (const std::uint16_t port : {srv->port(), srv->admin_port()}) {
    for (const char* path : {"/metrics", "/status", "/connections", "/health"}) {
      const std::string none = http_get(port, path);
      EXPECT_EQ(status_of(none), 401) << none;
      EXPECT_TRUE(has_bearer_challenge(none)) << none;
      EXPECT_NE(body_of(none).find("missing Authorization"), std::string::npos) << none;

      const std::string wrong = get_with(port, path, "Authorization: Bearer s3cret-tokem\r\n");
      EXPECT_EQ(status_of(wrong), 401) << wrong;
      EXPECT_TRUE(has_bearer_challenge(wrong)) << wrong;
      EXPECT_NE(body_of(wrong).find("wrong bearer token"), std::string::npos) << wrong;

      const std::string shorter = get_with(port, path, "Authorization: Bearer s3cret\r\n");
      EXPECT_EQ(status_of(shorter), 401) << shorter;

      const std::string basic = get_with(port, path, "Authorization: Basic czNjcmV0\r\n");
      EXPECT_EQ(status_of(basic), 401) << basic;
      EXPECT_NE(body_of(basic).find("not a Bearer token"), std::string::npos) << basic;

      const std::string ok = get_with(port, path, "Authorization: Bearer s3cret-token\r\n");
      EXPECT_EQ(status_of(ok), 200) << path << ": " << ok;
      EXPECT_FALSE(has_bearer_challenge(ok));
      // The scheme is case-insensitive (RFC 9110).
      const std::string lower = get_with(port, path, "authorization: bearer s3cret-token\r\n");
      EXPECT_EQ(status_of(lower), 200) << lower;
    }
  }
  // A HEAD without the token is refused the same way, without a body.
  const std::string head = http_get(srv->port(), "/health", "HEAD");
  EXPECT_EQ(status_of(head), 401) << head;
  EXPECT_EQ(body_of(head), "");
  // Two Authorization headers: which one counts would be a guess.
  const std::string two = get_with(srv->port(), "/health",
                                   "Authorization: Bearer s3cret-token\r\n"
                                   "Authorization: Bearer other\r\n");
  EXPECT_EQ(status_of(two), 400) << two;
}

TEST(admin_auth, without_a_token_the_pages_are_open) {
  auto cfg = test_server::make_config();
  cfg.http_admin = true;
  auto srv = started(cfg);
  EXPECT_EQ(status_of(http_get(srv->port(), "/health")), 200);
}

TEST(admin_auth, client_certificate_required_start_fails_when_nothing_could_satisfy_it) {
  auto only_rpc_port = test_server::make_config();
  only_rpc_port.http_admin = true;
  only_rpc_port.admin_require_client_certificate = true;
  corvid::rpc_server a(only_rpc_port);
  ASSERT_FALSE(a.init_tls(mutual_tls()));
  const auto ea = a.async_start();
  EXPECT_EQ(ea.code(), corvid::rpc_errc::invalid_argument);
  EXPECT_NE(ea.message().find("needs admin_address"), std::string::npos) << ea.message();

  corvid::rpc_server plain(https_admin_config());  // no TLS at all
  const auto eb = plain.async_start();
  EXPECT_EQ(eb.code(), corvid::rpc_errc::invalid_argument);
  EXPECT_NE(eb.message().find("ca_file"), std::string::npos) << eb.message();

  corvid::rpc_server no_ca(https_admin_config());  // TLS that verifies no client
  ASSERT_FALSE(no_ca.init_tls(
      {.certificate_chain_file = certs().server_cert, .private_key_file = certs().server_key}));
  const auto ec = no_ca.async_start();
  EXPECT_EQ(ec.code(), corvid::rpc_errc::invalid_argument);
  EXPECT_NE(ec.message().find("ca_file"), std::string::npos) << ec.message();
}

TEST(admin_auth, client_certificate_required_serves_https_to_verified_clients_only) {
  auto srv = started(https_admin_config(), mutual_tls());

  const std::string ok =
      https_get(srv->admin_port(), "/metrics", certs().client_cert, certs().client_key);
  EXPECT_EQ(status_of(ok), 200) << ok;
  const std::string health =
      https_get(srv->admin_port(), "/health", certs().san_client_cert, certs().san_client_key);
  EXPECT_EQ(status_of(health), 200) << health;
  EXPECT_EQ(body_of(health), "ok\n");

  // TLS without a client certificate: 403, and why.
  const std::string anonymous = https_get(srv->admin_port(), "/metrics", "", "");
  EXPECT_EQ(status_of(anonymous), 403) << anonymous;
  EXPECT_NE(body_of(anonymous).find("verified client certificate"), std::string::npos) << anonymous;

  // Plaintext HTTP on the RPC port (http_admin) proves nothing: 403.
  const std::string plain_rpc = http_get(srv->port(), "/health");
  EXPECT_EQ(status_of(plain_rpc), 403) << plain_rpc;
  // Plaintext HTTP on the HTTPS listener is no page either.
  EXPECT_NE(status_of(http_get(srv->admin_port(), "/health")), 200);

  // The RPC port still serves corvid clients.
  corvid::rpc_client client;
  ASSERT_FALSE(client.init_tls({.ca_file = certs().ca}));
  ASSERT_FALSE(corvid::sync_wait(connect(client, "localhost:" + std::to_string(srv->port()))));
}

TEST(admin_auth, client_certificate_and_bearer_token_together) {
  auto cfg = https_admin_config();
  cfg.admin_bearer_token = "tok";
  auto srv = started(cfg, mutual_tls());
  const std::string no_token =
      https_get(srv->admin_port(), "/health", certs().client_cert, certs().client_key);
  EXPECT_EQ(status_of(no_token), 401) << no_token;
  EXPECT_TRUE(has_bearer_challenge(no_token)) << no_token;
  const std::string both = https_get(srv->admin_port(), "/health", certs().client_cert,
                                     certs().client_key, "Authorization: Bearer tok\r\n");
  EXPECT_EQ(status_of(both), 200) << both;
  const std::string token_only =
      https_get(srv->admin_port(), "/health", "", "", "Authorization: Bearer tok\r\n");
  EXPECT_EQ(status_of(token_only), 403) << token_only;
}

}  // namespace
}  // namespace corvid_test
