#include "tls_context.hpp"

#include <fstream>

#include "asio_ssl.hpp"
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace corvid::detail {
namespace {

// TLS 1.3: OpenSSL's three suites, AES-128-GCM first (OpenSSL's default order puts
// AES-256 first, 30 % slower here: 2.6 vs 3.8 GB/s per core, `openssl speed`), with the
// same security margin for an RPC session's lifetime.
constexpr const char* tls13_suites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
// TLS 1.2 suites with forward secrecy and AEAD only.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

rpc_error bad(std::string what, const std::error_code& ec = {}) {
  if (ec) what += ": " + ec.message();
  return {rpc_errc::invalid_argument, "TLS: " + std::move(what)};
}

// A missing or unreadable file is reported as such, not as OpenSSL's "PEM lib" error.
rpc_error check_readable(const std::string& file, std::string_view role) {
  if (file.empty()) return bad(std::string(role) + " is not set");
  if (!std::ifstream(file).good()) {
    return bad("cannot read " + std::string(role) + " '" + file + "'");
  }
  return {};
}

}  // namespace

expected<std::shared_ptr<asio::ssl::context>, rpc_error> make_tls_context(const tls_config& config,
                                                                          tls_role role) {
  const bool server = role == tls_role::server;
  auto ctx = std::make_shared<asio::ssl::context>(server ? asio::ssl::context::tls_server
                                                         : asio::ssl::context::tls_client);
  std::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                   ec);
  SSL_CTX* native = ctx->native_handle();
  ::SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  if (::SSL_CTX_set_cipher_list(native, tls12_ciphers) != 1 ||
      ::SSL_CTX_set_ciphersuites(native, tls13_suites) != 1) {
    return unexpected(bad("no usable cipher suite"));
  }
  // Replies are written as they come: partial writes of a record may continue from a moved
  // buffer (asio re-offers the same bytes, but not always at the same address).
  ::SSL_CTX_set_mode(native, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);

  const bool has_cert = !config.certificate_chain_file.empty() || !config.private_key_file.empty();
  if (server || has_cert) {
    if (auto e = check_readable(config.certificate_chain_file, "certificate_chain_file")) {
      return unexpected(std::move(e));
    }
    if (auto e = check_readable(config.private_key_file, "private_key_file")) {
      return unexpected(std::move(e));
    }
    ctx->use_certificate_chain_file(config.certificate_chain_file, ec);
    if (ec) {
      return unexpected(bad("certificate_chain_file '" + config.certificate_chain_file + "'", ec));
    }
    ctx->use_private_key_file(config.private_key_file, asio::ssl::context::pem, ec);
    if (ec) {
      return unexpected(bad("private_key_file '" + config.private_key_file +
                                "' (for the certificate in '" + config.certificate_chain_file +
                                "')",
                            ec));
    }
    if (::SSL_CTX_check_private_key(native) != 1) {
      return unexpected(bad("private_key_file '" + config.private_key_file +
                            "' does not match the certificate in '" +
                            config.certificate_chain_file + "'"));
    }
  }
  if (!config.ca_file.empty()) {
    if (auto e = check_readable(config.ca_file, "ca_file")) return unexpected(std::move(e));
    ctx->load_verify_file(config.ca_file, ec);
    if (ec) return unexpected(bad("ca_file '" + config.ca_file + "'", ec));
  }
  if (server) {
    if (config.require_client_certificate && config.ca_file.empty()) {
      return unexpected(bad("require_client_certificate needs ca_file to verify them against"));
    }
    if (!config.ca_file.empty()) {
      // Tells clients which authorities their certificate must come from.
      if (STACK_OF(X509_NAME)* names = ::SSL_load_client_CA_file(config.ca_file.c_str())) {
        ::SSL_CTX_set_client_CA_list(native, names);
      }
      ctx->set_verify_mode(asio::ssl::verify_peer | (config.require_client_certificate
                                                         ? asio::ssl::verify_fail_if_no_peer_cert
                                                         : asio::ssl::verify_mode{0}));
    } else {
      ctx->set_verify_mode(asio::ssl::verify_none);
    }
  } else {
    if (config.ca_file.empty()) {
      ctx->set_default_verify_paths(ec);
      if (ec) return unexpected(bad("the system's trust store", ec));
    }
    ctx->set_verify_mode(asio::ssl::verify_peer);
  }
  return ctx;
}

void expect_server_name(SSL* ssl, const std::string& name) {
  X509_VERIFY_PARAM* param = ::SSL_get0_param(ssl);
  ::X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  // An IP address is matched against the certificate's IP entries; a name also goes out
  // as SNI, so a server with several certificates picks the right one.
  if (::X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) != 1) {
    ::X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    // SSL_set_tlsext_host_name, without the macro's C cast.
    ::SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(name.c_str()));
  }
}

std::string describe_tls_failure(const std::error_code& ec, long verify_result) {
  if (verify_result != X509_V_OK) {
    return "certificate verify failed: " +
           std::string(::X509_verify_cert_error_string(verify_result));
  }
  if (ec == asio::ssl::error::stream_truncated || ec == asio::error::eof) {
    return "the peer closed the connection during the TLS handshake";
  }
  std::string why = ec.message();
  if (ec.category() == asio::error::get_ssl_category()) {
    // OpenSSL's reason string alone ("wrong version number"), not "(SSL routines)".
    if (const char* reason = ::ERR_reason_error_string(static_cast<unsigned long>(ec.value()))) {
      why = reason;
    }
    if (ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER ||
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_PACKET_LENGTH_TOO_LONG) {
      why += " (is the peer speaking TLS?)";
    }
  }
  return why;
}

}  // namespace corvid::detail
