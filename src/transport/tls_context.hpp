#pragma once
// Builds the OpenSSL context a tls_config describes, and says in words why a handshake
// failed. Contexts are shared: every connection made with one keeps it alive, so a server
// that reloads its certificates leaves open connections on the context they started with.
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "corvid/expected.hpp"
#include "corvid/runtime/tls_config.hpp"

#include "../runtime/asio_all.hpp"
#include "asio_ssl.hpp"

namespace corvid::detail {

enum class tls_role { server, client };

// invalid_argument naming the file or setting at fault and what OpenSSL said.
expected<std::shared_ptr<asio::ssl::context>, rpc_error> make_tls_context(const tls_config& config,
                                                                          tls_role role);

// Client: the name (or IP address) the server's certificate must match, and the SNI sent.
void expect_server_name(SSL* ssl, const std::string& name);

// "certificate verify failed: certificate has expired", "the peer closed the connection
// during the handshake", "wrong version number (is the peer speaking TLS?)", ...
std::string describe_tls_failure(const std::error_code& ec, long verify_result);

// The first byte of a TLS connection (a handshake record).
inline constexpr unsigned char tls_handshake_record = 0x16;

}  // namespace corvid::detail
