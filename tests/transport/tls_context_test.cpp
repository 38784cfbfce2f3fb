// TLS settings are checked when they are given (init_tls), each mistake named: which file,
// which setting, what OpenSSL said.
#include "transport/tls_context.hpp"

#include <gtest/gtest.h>

#include "test_certs.hpp"

namespace corvid::detail {
namespace {

const test::test_certs& certs() {
  static const test::test_certs c;
  return c;
}

rpc_error server_error(const tls_config& c) {
  auto ctx = make_tls_context(c, tls_role::server);
  return ctx ? rpc_error{} : ctx.error();
}

tls_config good_server() {
  return {.certificate_chain_file = certs().server_cert, .private_key_file = certs().server_key};
}

TEST(tls_context, a_valid_server_and_client_build) {
  EXPECT_FALSE(server_error(good_server()));
  auto mtls = good_server();
  mtls.ca_file = certs().ca;
  mtls.require_client_certificate = true;
  EXPECT_FALSE(server_error(mtls));
  EXPECT_TRUE(make_tls_context({.ca_file = certs().ca}, tls_role::client).has_value());
  EXPECT_TRUE(make_tls_context({.certificate_chain_file = certs().client_cert,
                                .private_key_file = certs().client_key,
                                .ca_file = certs().ca},
                               tls_role::client)
                  .has_value());
}

TEST(tls_context, a_missing_file_is_named) {
  auto c = good_server();
  c.certificate_chain_file = certs().dir + "/nope.pem";
  const auto e = server_error(c);
  EXPECT_EQ(e.code(), rpc_errc::invalid_argument);
  EXPECT_NE(e.message().find("certificate_chain_file"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("nope.pem"), std::string::npos) << e.message();

  c = good_server();
  c.private_key_file = "";
  EXPECT_NE(server_error(c).message().find("private_key_file is not set"), std::string::npos);

  c = good_server();
  c.ca_file = certs().dir + "/no_ca.pem";
  EXPECT_NE(server_error(c).message().find("ca_file"), std::string::npos);
}

TEST(tls_context, a_file_that_is_not_pem_says_what_openssl_said) {
  auto c = good_server();
  c.certificate_chain_file = certs().write("garbage.pem", "not a certificate\n");
  const auto e = server_error(c);
  EXPECT_EQ(e.code(), rpc_errc::invalid_argument);
  EXPECT_NE(e.message().find("garbage.pem"), std::string::npos) << e.message();
  // OpenSSL's reason follows the file name.
  EXPECT_NE(e.message().find("': "), std::string::npos) << e.message();
}

TEST(tls_context, a_key_that_does_not_match_the_certificate_is_refused) {
  auto c = good_server();
  c.private_key_file = certs().client_key;
  const auto e = server_error(c);
  EXPECT_EQ(e.code(), rpc_errc::invalid_argument);
  EXPECT_NE(e.message().find("mismatch"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("client.key"), std::string::npos) << e.message();
}

TEST(tls_context, requiring_client_certificates_needs_a_ca) {
  auto c = good_server();
  c.require_client_certificate = true;
  const auto e = server_error(c);
  EXPECT_EQ(e.code(), rpc_errc::invalid_argument);
  EXPECT_NE(e.message().find("ca_file"), std::string::npos) << e.message();
}

// Runs a handshake between the two contexts in memory (a BIO pair): the name of what they
// agreed on, or the error.
std::string handshake(asio::ssl::context& server, asio::ssl::context& client,
                      long client_max_version = 0) {
  SSL* s = SSL_new(server.native_handle());
  SSL* c = SSL_new(client.native_handle());
  if (client_max_version != 0) SSL_set_max_proto_version(c, client_max_version);
  BIO *sb = nullptr, *cb = nullptr;
  BIO_new_bio_pair(&sb, 0, &cb, 0);
  SSL_set_bio(s, sb, sb);
  SSL_set_bio(c, cb, cb);
  SSL_set_accept_state(s);
  SSL_set_connect_state(c);
  expect_server_name(c, "localhost");
  std::string result;
  for (int i = 0; i < 20 && result.empty(); ++i) {
    const int rc = SSL_do_handshake(c);
    const int rs = SSL_do_handshake(s);
    if (rc == 1 && rs == 1) {
      result = std::string(SSL_get_version(c)) + " " + SSL_get_cipher_name(c);
    } else if ((rc != 1 && SSL_get_error(c, rc) == SSL_ERROR_SSL) ||
               (rs != 1 && SSL_get_error(s, rs) == SSL_ERROR_SSL)) {
      result = "failed";
    }
  }
  SSL_free(s);
  SSL_free(c);
  return result;
}

TEST(tls_context, tls13_with_aes128_gcm_first_and_nothing_below_tls12) {
  auto server = make_tls_context(good_server(), tls_role::server);
  auto client = make_tls_context({.ca_file = certs().ca}, tls_role::client);
  ASSERT_TRUE(server.has_value());
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ(handshake(**server, **client), "TLSv1.3 TLS_AES_128_GCM_SHA256");
  EXPECT_EQ(handshake(**server, **client, TLS1_2_VERSION), "TLSv1.2 ECDHE-ECDSA-AES128-GCM-SHA256");
  EXPECT_EQ(handshake(**server, **client, TLS1_1_VERSION), "failed");
}

TEST(tls_context, failures_are_described_in_words) {
  EXPECT_EQ(describe_tls_failure({}, X509_V_ERR_CERT_HAS_EXPIRED),
            "certificate verify failed: certificate has expired");
  EXPECT_EQ(describe_tls_failure(asio::error::eof, X509_V_OK),
            "the peer closed the connection during the TLS handshake");
}

}  // namespace
}  // namespace corvid::detail
