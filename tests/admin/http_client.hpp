#pragma once
// A blocking HTTP/1.1 exchange with a server's admin side, for the tests.
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <sys/socket.h>
#include <sys/time.h>

namespace corvid_test {

class http_socket {
 public:
  // `from`: the local address to connect from (another loopback address, 127.0.0.2, is
  // another peer to the server's per-peer shares).
  explicit http_socket(std::uint16_t port, int timeout_s = 5, const char* from = nullptr)
      : socket_(io_) {
    if (from != nullptr) {
      socket_.open(asio::ip::tcp::v4());
      socket_.bind({asio::ip::make_address(from), 0});
    }
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
    timeval tv{timeout_s, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  bool send(std::string_view bytes) {
    std::error_code ec;
    asio::write(socket_, asio::buffer(bytes), ec);
    return !ec;
  }
  // Everything until the server closes (or the receive timeout).
  std::string read_all() {
    std::string out;
    char buf[4096];
    for (;;) {
      std::error_code ec;
      const std::size_t n = socket_.read_some(asio::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    return out;
  }
  asio::ip::tcp::socket& socket() { return socket_; }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
};

inline std::string http_get(std::uint16_t port, const std::string& path,
                            const std::string& method = "GET", const char* from = nullptr) {
  http_socket s(port, 5, from);
  s.send(method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  return s.read_all();
}

inline int status_of(const std::string& response) {
  if (response.size() < 12 || response.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::stoi(response.substr(9, 3));
}

inline std::string body_of(const std::string& response) {
  const auto p = response.find("\r\n\r\n");
  return p == std::string::npos ? std::string() : response.substr(p + 4);
}

}  // namespace corvid_test
