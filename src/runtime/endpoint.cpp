#include "endpoint.hpp"

#include "asio_all.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

namespace corvid::detail {

asio::generic::stream_protocol::endpoint unix_endpoint(std::string_view spec) {
  spec.remove_prefix(unix_prefix.size());
  return asio::local::stream_protocol::endpoint(std::string(spec));
}

std::string to_string(const asio::generic::stream_protocol::endpoint& ep) {
  const auto* sa = static_cast<const sockaddr*>(ep.data());
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  if (sa->sa_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(sa);
    const std::size_t path_len = ep.size() > offsetof(sockaddr_un, sun_path)
                                     ? ep.size() - offsetof(sockaddr_un, sun_path)
                                     : 0;
    std::string path(un->sun_path, strnlen(un->sun_path, path_len));
    return path.empty() ? std::string("unix") : "unix:" + path;
  }
  return "unknown";
}

std::uint16_t port_of(const asio::generic::stream_protocol::endpoint& ep) noexcept {
  const auto* sa = static_cast<const sockaddr*>(ep.data());
  if (sa->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  if (sa->sa_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
  }
  return 0;
}

}  // namespace corvid::detail
