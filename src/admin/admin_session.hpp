#pragma once
// One HTTP admin request on the RPC port (server_config::http_admin): a connection whose
// first byte is 'G' or 'H' (GET, HEAD) is handed here by its server connection before any
// corvid frame is read. One request, one response, then the connection closes.
#include <string>

#include <asio/generic/stream_protocol.hpp>

namespace corvid::detail {
class server_core;
}

namespace corvid::admin {

// At most this many admin connections at once per server; more are answered 503 and closed
// (the RPC connections are not affected).
inline constexpr int max_admin_sessions = 16;

// The first byte of an HTTP request the admin side serves (corvid frames start with 'C',
// TLS records with 0x16).
constexpr bool looks_like_http(unsigned char first) noexcept {
  return first == 'G' || first == 'H';
}

void serve(detail::server_core& core, asio::generic::stream_protocol::socket socket);

}  // namespace corvid::admin
