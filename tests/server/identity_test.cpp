// request_context::identity(): what the transport proved about the caller, computed once per
// connection. Mutual TLS with a client certificate carrying every kind of subjectAltName, TLS
// without a client certificate, plaintext TCP, a Unix-domain socket (SO_PEERCRED), and RDMA
// set up over mutual TLS (the identity the TLS setup connection proved).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <unistd.h>

#include "server_test_support.hpp"
#include "test_certs.hpp"
#include "test_provider.hpp"
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace corvid_server_test {
namespace {

using corvid::test::test_certs;

const test_certs& certs() {
  static const test_certs c;
  return c;
}

// The identity as a handler saw it, sent back to the test.
struct seen_identity {
  bool has_certificate = false;
  std::string subject;
  std::vector<std::string> dns_names;
  std::vector<std::string> uris;
  std::vector<std::string> ip_addresses;
  std::string fingerprint_sha256;
  bool has_unix_peer = false;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::int32_t pid = 0;
  std::string described;
};

seen_identity whoami(corvid::request_context& ctx) {
  const corvid::peer_identity& id = ctx.identity();
  seen_identity s;
  s.has_certificate = id.has_certificate;
  s.subject = id.subject;
  s.dns_names = id.dns_names;
  s.uris = id.uris;
  s.ip_addresses = id.ip_addresses;
  s.fingerprint_sha256 = id.fingerprint_sha256;
  s.has_unix_peer = id.unix_peer.has_value();
  if (id.unix_peer) {
    s.uid = id.unix_peer->uid;
    s.gid = id.unix_peer->gid;
    s.pid = id.unix_peer->pid;
  }
  s.described = id.describe();
  return s;
}

// SHA-256 of the certificate's DER, computed here from the PEM file with OpenSSL's digest
// API (not X509_digest, which the server uses).
std::string der_sha256(const std::string& pem_path) {
  std::FILE* f = std::fopen(pem_path.c_str(), "r");
  if (f == nullptr) return {};
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (cert == nullptr) return {};
  unsigned char* der = nullptr;
  const int len = i2d_X509(cert, &der);
  X509_free(cert);
  if (len <= 0) return {};
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  EVP_Digest(der, static_cast<std::size_t>(len), md, &md_len, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < md_len; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", md[i]);
    hex += byte;
  }
  return hex;
}

corvid::tls_config server_tls(bool mutual) {
  corvid::tls_config t{.certificate_chain_file = certs().server_cert,
                       .private_key_file = certs().server_key};
  if (mutual) t.ca_file = certs().ca;
  return t;
}

std::unique_ptr<corvid::rpc_server> started(corvid::server_config cfg,
                                            std::optional<corvid::tls_config> tls) {
  auto s = std::make_unique<corvid::rpc_server>(std::move(cfg));
  s->register_handler<whoami>();
  if (tls) {
    if (auto e = s->init_tls(std::move(*tls))) throw std::runtime_error(e.message());
  }
  if (auto e = s->async_start()) throw std::runtime_error(e.message());
  return s;
}

std::string localhost(const corvid::rpc_server& s) {
  return "localhost:" + std::to_string(s.port());
}

TEST(identity, mutual_tls_shows_the_client_certificate) {
  auto srv = started(loopback_config(), server_tls(true));
  corvid::rpc_client client;
  ASSERT_FALSE(client.init_tls({.certificate_chain_file = certs().san_client_cert,
                                .private_key_file = certs().san_client_key,
                                .ca_file = certs().ca}));
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, localhost(*srv))));
  auto r = call<whoami>(client);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(r->has_certificate);
  EXPECT_EQ(r->subject, test_certs::san_client_subject);
  EXPECT_EQ(r->dns_names, (std::vector<std::string>{test_certs::san_client_dns[0],
                                                    test_certs::san_client_dns[1]}));
  EXPECT_EQ(r->uris, std::vector<std::string>{test_certs::san_client_uri});
  EXPECT_EQ(r->ip_addresses, (std::vector<std::string>{test_certs::san_client_ips[0],
                                                       test_certs::san_client_ips[1]}));
  const std::string fingerprint = der_sha256(certs().san_client_cert);
  ASSERT_EQ(fingerprint.size(), 64u);
  EXPECT_EQ(r->fingerprint_sha256, fingerprint);
  EXPECT_FALSE(r->has_unix_peer);
  EXPECT_EQ(
      r->described.rfind("subject=CN=corvid-san-client dns=[alice.example,alice.internal]", 0), 0u)
      << r->described;

  // Every call on the connection sees the same identity.
  auto again = call<whoami>(client);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->fingerprint_sha256, fingerprint);
}

// A server that takes RDMA connections set up over mutual TLS.
std::unique_ptr<corvid::rpc_server> rdma_over_mtls_server() {
  auto srv = std::make_unique<corvid::rpc_server>(loopback_config());
  srv->register_handler<whoami>();
  if (auto e = srv->init_ibv(corvid_rdma_test::test_ibv())) throw std::runtime_error(e.message());
  if (auto e = srv->init_tls(server_tls(true))) throw std::runtime_error(e.message());
  if (auto e = srv->async_start()) throw std::runtime_error(e.message());
  return srv;
}

// A client of `srv` with the certificate `cert` (key `key`), connected over RDMA set up
// through TLS.
std::unique_ptr<corvid::rpc_client> rdma_client(const corvid::rpc_server& srv,
                                                const std::string& cert, const std::string& key) {
  auto client = std::make_unique<corvid::rpc_client>();
  if (auto e = client->init_tls(
          {.certificate_chain_file = cert, .private_key_file = key, .ca_file = certs().ca}))
    throw std::runtime_error(e.message());
  if (auto e = client->init_ibv(corvid_rdma_test::test_ibv()))
    throw std::runtime_error(e.message());
  if (auto e = corvid::sync_wait(corvid::test::connect(*client, localhost(srv))))
    throw std::runtime_error(e.message());
  return client;
}

// A verified certificate may carry thousands of names: the identity read from it is charged
// to the server's TLS memory and released with the connection. Over RDMA set up through TLS,
// the session's own bytes are freed at the switch, so what stays charged is the identity's.
TEST(identity, a_certificates_names_are_charged_to_the_servers_memory) {
  auto srv = rdma_over_mtls_server();
  auto tls_bytes = [&] {
    const auto m = srv->memory();
    const auto* n = m.find("tls_sessions");
    return n ? n->current : 0;
  };
  {
    auto client = rdma_client(*srv, certs().many_names_cert, certs().many_names_key);
    auto r = call<whoami>(*client);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_GT(client->stats().rdma_sends, 0u);
    EXPECT_EQ(r->dns_names.size(), static_cast<std::size_t>(test_certs::many_names_count));
    // Each name's 40 characters at least (their strings' headers and the vector come on top).
    EXPECT_GE(tls_bytes(), test_certs::many_names_count * 40u);
  }
  EXPECT_TRUE(eventually([&] { return tls_bytes() == 0; })) << tls_bytes();
}

TEST(identity, rdma_keeps_what_its_tls_setup_connection_proved) {
  auto srv = rdma_over_mtls_server();
  auto client = rdma_client(*srv, certs().san_client_cert, certs().san_client_key);
  auto r = call<whoami>(*client);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_GT(client->stats().rdma_sends, 0u);  // the call went over the queue pair
  EXPECT_TRUE(r->has_certificate);
  EXPECT_EQ(r->uris, std::vector<std::string>{test_certs::san_client_uri});
  EXPECT_EQ(r->fingerprint_sha256, der_sha256(certs().san_client_cert));
}

TEST(identity, tls_without_a_client_certificate_has_none) {
  auto srv = started(loopback_config(), server_tls(true));  // asks, does not require
  corvid::rpc_client client;
  ASSERT_FALSE(client.init_tls({.ca_file = certs().ca}));
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, localhost(*srv))));
  auto r = call<whoami>(client);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_FALSE(r->has_certificate);
  EXPECT_TRUE(r->subject.empty());
  EXPECT_TRUE(r->uris.empty());
  EXPECT_TRUE(r->fingerprint_sha256.empty());
  EXPECT_EQ(r->described, "none");
}

TEST(identity, plaintext_tcp_proves_nothing) {
  auto srv = started(loopback_config(), std::nullopt);
  corvid::rpc_client client;
  connect(client, *srv);
  auto r = call<whoami>(client);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_FALSE(r->has_certificate);
  EXPECT_FALSE(r->has_unix_peer);
  EXPECT_EQ(r->described, "none");
}

TEST(identity, unix_socket_shows_the_peer_process) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("corvid-id-" + std::to_string(::getpid())))
          .string();
  auto cfg = loopback_config();
  cfg.address = "unix:" + path;
  auto srv = started(cfg, std::nullopt);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, "unix:" + path)));
  auto r = call<whoami>(client);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(r->has_unix_peer);
  EXPECT_FALSE(r->has_certificate);
  EXPECT_EQ(r->uid, ::getuid());
  EXPECT_EQ(r->gid, ::getgid());
  EXPECT_EQ(r->pid, ::getpid());  // the client runs in this process
  EXPECT_EQ(r->described, "unix uid=" + std::to_string(::getuid()) + " gid=" +
                              std::to_string(::getgid()) + " pid=" + std::to_string(::getpid()));
  srv.reset();
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

}  // namespace
}  // namespace corvid_server_test
