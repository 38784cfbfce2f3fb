#pragma once
// The admin pages on an address of their own (server_config::admin_address), beside or
// instead of the RPC port's (http_admin): every connection accepted here is an admin session,
// with a place in this listener's own pool: a private port shares no capacity with the public
// one, so a crowd on the RPC port cannot make this one answer 503.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "corvid/error.hpp"

#include "../admission/shared_slots.hpp"
#include "../runtime/asio_all.hpp"
#include "../transport/asio_ssl.hpp"
#include "admin_host.hpp"

namespace corvid::admin {

class admin_listener {
 public:
  // Listens on `address` ("host:port", port 0 = ephemeral); accepts on `reactor`.
  admin_listener(admin_host& host, asio::io_context& reactor);
  rpc_error listen(const std::string& address);
  // HTTPS: every connection accepted from now on handshakes with the context `context()`
  // returns then (the server's current one, so a reload applies to the next connection).
  void serve_tls(std::function<std::shared_ptr<asio::ssl::context>()> context) {
    tls_ = std::move(context);
  }
  void start();  // on the reactor
  void close();  // on the reactor: no more admin connections
  std::uint16_t port() const noexcept { return port_; }
  const detail::shared_slots& sessions() const noexcept { return *sessions_; }

 private:
  void accept_next();
  admin_host& host_;
  std::shared_ptr<detail::shared_slots> sessions_;
  asio::basic_socket_acceptor<asio::generic::stream_protocol> acceptor_;
  asio::steady_timer retry_;
  std::uint16_t port_ = 0;
  std::function<std::shared_ptr<asio::ssl::context>()> tls_;  // empty: plain HTTP
};

}  // namespace corvid::admin
