#pragma once
// The raw loopback client the stream fuzzers drive the server with: plain blocking sockets,
// so an input's bytes reach the server exactly as split, with timeouts that turn a server
// that never answers or never closes into a finding instead of a hung fuzzer.
#include <cerrno>
#include <cstdint>
#include <string_view>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace corvid_fuzz {

// A connection to 127.0.0.1:`port` whose sends and receives give up after `timeout_s`;
// `rcvbuf` (0: the kernel's default) sizes its receive buffer before connecting. -1 when
// the socket cannot be made or the connect fails.
inline int connect_loopback(std::uint16_t port, int timeout_s, int rcvbuf = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

enum class send_result : std::uint8_t {
  sent,     // every byte
  closed,   // the server closed its side first (it may: a framing error, a failed handshake)
  blocked,  // the send timeout passed with the server reading nothing
};

inline send_result send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return send_result::blocked;
    if (n <= 0) return send_result::closed;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return send_result::sent;
}

}  // namespace corvid_fuzz
