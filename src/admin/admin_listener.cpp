#include "admin_listener.hpp"

#include <chrono>
#include <cstdlib>

#include "../runtime/asio_all.hpp"
#include "../runtime/endpoint.hpp"
#include "admin_session.hpp"

namespace corvid::admin {

admin_listener::admin_listener(admin_host& host, asio::io_context& reactor)
    : host_(host),
      sessions_(detail::shared_slots::make(max_admin_sessions, max_admin_sessions_per_peer)),
      acceptor_(reactor),
      retry_(reactor) {}

rpc_error admin_listener::listen(const std::string& address) {
  const auto colon = address.rfind(':');
  std::error_code ec;
  asio::ip::address ip;
  if (colon != std::string::npos) ip = asio::ip::make_address(address.substr(0, colon), ec);
  const std::string port_text = colon == std::string::npos ? "" : address.substr(colon + 1);
  char* end = nullptr;
  const unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (colon == std::string::npos || ec || port_text.empty() || *end != '\0' || port > 65535) {
    return {rpc_errc::invalid_argument, "bad admin_address '" + address + "' (want ip:port)"};
  }
  const asio::generic::stream_protocol::endpoint ep =
      asio::ip::tcp::endpoint(ip, static_cast<std::uint16_t>(port));
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return {rpc_errc::connect_failed,
            "cannot listen on admin_address " + address + ": " + ec.message()};
  }
  port_ = detail::port_of(acceptor_.local_endpoint());
  return {};
}

void admin_listener::start() { accept_next(); }

void admin_listener::close() {
  std::error_code ignored;
  acceptor_.close(ignored);
  retry_.cancel();
}

void admin_listener::accept_next() {
  acceptor_.async_accept(
      [this](const std::error_code& ec, asio::generic::stream_protocol::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (ec) {
          // Out of descriptors or a transient failure: back off instead of spinning.
          retry_.expires_after(std::chrono::milliseconds(100));
          retry_.async_wait([this](const std::error_code& e) {
            if (!e) accept_next();
          });
          return;
        }
        serve(host_, *sessions_, std::move(socket), tls_ ? tls_() : nullptr);
        accept_next();
      });
}

}  // namespace corvid::admin
