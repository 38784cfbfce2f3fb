#pragma once
// A TCP (or UDP) port nothing listens on now, for programs that must be told their port.
// Another process may take it before the program binds it: callers retry on that failure.
#include <cstdint>
#include <stdexcept>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

namespace corvid::test {

inline bool can_bind(int type, std::uint16_t port) {
  const int fd = ::socket(AF_INET, type, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

// A port free for both UDP and TCP now (a DNS server listens on both).
inline std::uint16_t free_udp_and_tcp_port();

inline std::uint16_t free_port(int type = SOCK_STREAM) {
  const int fd = ::socket(AF_INET, type, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("no free port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

inline std::uint16_t free_udp_and_tcp_port() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::uint16_t p = free_port(SOCK_DGRAM);
    if (can_bind(SOCK_STREAM, p)) return p;
  }
  throw std::runtime_error("no port free for both UDP and TCP");
}

}  // namespace corvid::test
