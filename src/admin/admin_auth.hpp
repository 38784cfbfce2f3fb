#pragma once
// Who may read the admin pages (server_config::admin_bearer_token,
// admin_require_client_certificate): checked on every admin request before its page is built,
// so a refused peer costs no snapshot and learns nothing but why it was refused.
#include <optional>

#include "corvid/error.hpp"
#include "corvid/server/server_config.hpp"

#include "admin_pages.hpp"
#include "http_request.hpp"

namespace corvid::admin {

// The refusal of `request`, or nothing when it may be served: 403 when a verified client
// certificate is required and the connection has none (`has_certificate`), 401 with
// "WWW-Authenticate: Bearer" when the bearer token is missing or wrong. The token is compared
// in constant time.
std::optional<http_response> refuse_admin_request(const http_request& request,
                                                  const server_config& config,
                                                  bool has_certificate);

// At start: invalid_argument when admin_require_client_certificate is set but no admin
// request could ever carry a verified certificate: the admin_address listener is the only
// HTTPS one (http_admin's requests are told apart before TLS), and it needs the server's TLS
// (`tls`) with a CA to verify clients against (`verifies_clients`: tls_config::ca_file).
rpc_error check_admin_settings(const server_config& config, bool tls, bool verifies_clients);

}  // namespace corvid::admin
