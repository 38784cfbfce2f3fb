#pragma once
// The admin pages on an address of their own (server_config::admin_address), beside or
// instead of the RPC port's (http_admin): every connection accepted here is an admin session.
#include <cstdint>
#include <optional>
#include <string>

#include <asio/basic_socket_acceptor.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include "corvid/error.hpp"

namespace corvid::detail {
class server_core;
}

namespace corvid::admin {

class admin_listener {
 public:
  // Listens on `address` ("host:port", port 0 = ephemeral); accepts on `reactor`.
  admin_listener(detail::server_core& core, asio::io_context& reactor);
  rpc_error listen(const std::string& address);
  void start();  // on the reactor
  void close();  // on the reactor: no more admin connections
  std::uint16_t port() const noexcept { return port_; }

 private:
  void accept_next();
  detail::server_core& core_;
  asio::basic_socket_acceptor<asio::generic::stream_protocol> acceptor_;
  asio::steady_timer retry_;
  std::uint16_t port_ = 0;
};

}  // namespace corvid::admin
