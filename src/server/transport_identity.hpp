#pragma once
// What the transport proved about a server connection's peer, read once when the connection
// is set up (connection_setup after the TLS handshake, server_connection at accept for a
// Unix-domain socket) into its peer_identity. Reactor thread.
#include <optional>

#include "corvid/server/peer_identity.hpp"

#include <openssl/ssl.h>

namespace corvid::detail {

// Fills the certificate fields of `out` from the peer certificate of the completed handshake
// on `ssl`, only when OpenSSL verified it (a certificate was sent and the verify result is
// X509_V_OK); otherwise leaves has_certificate false and the fields empty.
void read_certificate_identity(SSL* ssl, peer_identity& out);

// The bytes `id` holds on the heap (its strings and their vectors): what the connection charges
// for it, since a verified certificate may carry many alternative names.
std::size_t held_bytes(const peer_identity& id) noexcept;

// The connecting process of the Unix-domain socket `fd` (SO_PEERCRED); empty when the kernel
// does not say (not a Unix socket, or the call failed).
std::optional<unix_peer_credentials> unix_peer_of(int fd) noexcept;

}  // namespace corvid::detail
