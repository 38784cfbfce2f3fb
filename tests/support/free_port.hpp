#pragma once
// A TCP (or UDP) port nothing listens on now, for programs that must be told their port.
#include <cstdint>
#include <stdexcept>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

namespace corvid::test {

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

}  // namespace corvid::test
