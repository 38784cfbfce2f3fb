#include "rejection.hpp"

#include <charconv>

#include <sys/un.h>

namespace corvid::discovery {
namespace {

rejection bad(std::string_view address, const char* why) {
  // The address is outside input: quoted only in part, so a log line stays a line.
  std::string shown;
  for (char c : address.substr(0, 80)) {
    shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return {metrics::discovery_reject::bad_address,
          "address '" + shown + (address.size() > 80 ? "...'" : "'") + ": " + why};
}

bool printable(std::string_view s) {
  for (char c : s) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace

std::optional<rejection> check_address(std::string_view address) {
  if (address.starts_with("unix:")) {
    const std::string_view path = address.substr(5);
    if (path.empty()) return bad(address, "no socket path");
    if (path.size() >= sizeof(sockaddr_un::sun_path)) return bad(address, "socket path too long");
    if (path.find('\0') != std::string_view::npos) return bad(address, "NUL in the socket path");
    return std::nullopt;
  }
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return bad(address, "no port");
  std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
      value > 65535) {
    return bad(address, "the port is not a number 1..65535");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return bad(address, "no host");
  if (host.size() > 255) return bad(address, "host name longer than 255");
  if (!printable(host)) return bad(address, "blank or control character in the host");
  return std::nullopt;
}

}  // namespace corvid::discovery
