#include "admin_auth.hpp"

#include <string_view>

#include <openssl/crypto.h>

namespace corvid::admin {
namespace {

http_response unauthorized(std::string_view why) {
  http_response r = error_response(401, why);
  r.www_authenticate = "Bearer";
  return r;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  }
  return true;
}

}  // namespace

std::optional<http_response> refuse_admin_request(const http_request& request,
                                                  const server_config& config,
                                                  bool has_certificate) {
  if (config.admin_require_client_certificate && !has_certificate) {
    return error_response(403, "the admin pages require a verified client certificate (TLS)");
  }
  const std::string& token = config.admin_bearer_token;
  if (token.empty()) return std::nullopt;
  const std::string_view auth = request.authorization;
  if (auth.empty()) return unauthorized("missing Authorization: Bearer <token>");
  const std::size_t sp = auth.find(' ');
  if (sp == std::string_view::npos || !iequals(auth.substr(0, sp), "bearer")) {
    return unauthorized("the Authorization header is not a Bearer token");
  }
  std::string_view given = auth.substr(sp + 1);
  while (!given.empty() && (given.front() == ' ' || given.front() == '\t')) given.remove_prefix(1);
  // The length is not secret (it leaks through the response time of any comparison); the
  // bytes are compared without an early exit.
  if (given.size() != token.size() ||
      CRYPTO_memcmp(given.data(), token.data(), token.size()) != 0) {
    return unauthorized("wrong bearer token");
  }
  return std::nullopt;
}

rpc_error check_admin_settings(const server_config& config, bool tls, bool verifies_clients) {
  if (!config.admin_require_client_certificate) return {};
  if (config.admin_address.empty()) {
    return {rpc_errc::invalid_argument,
            "admin_require_client_certificate needs admin_address: only that listener serves "
            "the admin pages over TLS (http_admin's requests on the RPC port are plaintext)"};
  }
  if (!tls || !verifies_clients) {
    return {rpc_errc::invalid_argument,
            "admin_require_client_certificate needs TLS with a CA to verify client certificates "
            "(rpc_server::init_tls with tls_config::ca_file)"};
  }
  return {};
}

}  // namespace corvid::admin
