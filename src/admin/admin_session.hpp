#pragma once
// One HTTP admin request: a connection on the RPC port whose first byte is 'G' or 'H' (GET,
// HEAD; server_config::http_admin), handed here by its server connection before any corvid
// frame is read, or any connection accepted on admin_address (admin_listener). One request,
// one response, then the connection closes.
#include <memory>

#include "../admission/shared_slots.hpp"
#include "../runtime/asio_all.hpp"
#include "../transport/asio_ssl.hpp"
#include "admin_host.hpp"

namespace corvid::admin {

// The first byte of an HTTP request the admin side serves (corvid frames start with 'C',
// TLS records with 0x16).
constexpr bool looks_like_http(unsigned char first) noexcept {
  return first == 'G' || first == 'H';
}

// Serves `socket` with a place in `sessions` (max_admin_sessions, max_admin_sessions_per_peer
// from one address); without one it is answered 503 and closed (nothing else is affected). The
// place is given back the moment the session ends, the peer's reset or FIN included. With
// `tls` the session is HTTPS: a TLS handshake first (the client's certificate verified as the
// context says), then the same request and response.
void serve(admin_host& host, detail::shared_slots& sessions,
           asio::generic::stream_protocol::socket socket,
           std::shared_ptr<asio::ssl::context> tls = nullptr);
// The RPC port's: a place in host.rpc_port_admin_sessions().
void serve(admin_host& host, asio::generic::stream_protocol::socket socket);

}  // namespace corvid::admin
