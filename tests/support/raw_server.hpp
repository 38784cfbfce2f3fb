#pragma once
// A fake server for client tests: a loopback listener that accepts one rpc_client, reads the
// frames it sends exactly as they are on the wire and answers with bytes the test builds.
// Blocking, every read bounded (5 s), so a client that never sends fails the test instead of
// hanging it.
#include <cstdint>
#include <string>
#include <string_view>

#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <corvid/protocol/frame_header.hpp>

#include <sys/socket.h>
#include <sys/time.h>

namespace corvid::test {

class raw_server {
 public:
  raw_server() : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}), socket_(io_) {}
  std::string endpoint() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  // Takes the client's connection (its connect has completed: the kernel queued it).
  void accept() {
    acceptor_.accept(socket_);
    timeval tv{5, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  // One whole frame, header first, as sent; empty if none came within 5 s.
  std::string read_frame() {
    std::string f(protocol::header_size, '\0');
    std::error_code ec;
    asio::read(socket_, asio::buffer(f), ec);
    if (ec) return {};
    protocol::frame_header h;
    if (protocol::decode_header(f.data(), h, UINT32_MAX) != protocol::header_errc::ok) return f;
    std::string rest(h.payload_size(), '\0');
    asio::read(socket_, asio::buffer(rest), ec);
    if (ec) return {};
    return f + rest;
  }
  void send(std::string_view bytes) { asio::write(socket_, asio::buffer(bytes)); }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket socket_;
};

}  // namespace corvid::test
