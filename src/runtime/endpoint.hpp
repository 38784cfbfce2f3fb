#pragma once
// Endpoints as corvid spells them: "host:port", "[v6]:port", or "unix:/path/to.sock". Both
// TCP and Unix-domain connections run on asio's generic stream sockets, so everything above
// the socket is one code path.
#include <cstdint>
#include <string>
#include <string_view>

#include "asio_all.hpp"

namespace corvid::detail {

inline constexpr std::string_view unix_prefix = "unix:";

inline bool is_unix_endpoint(std::string_view s) noexcept { return s.starts_with(unix_prefix); }

// "unix:/p" -> a local endpoint for /p.
asio::generic::stream_protocol::endpoint unix_endpoint(std::string_view spec);

// "ip:port" for IP endpoints, "unix:/path" (or "unix") for local ones.
std::string to_string(const asio::generic::stream_protocol::endpoint& ep);
// The port of an IP endpoint; 0 for others.
std::uint16_t port_of(const asio::generic::stream_protocol::endpoint& ep) noexcept;

}  // namespace corvid::detail
