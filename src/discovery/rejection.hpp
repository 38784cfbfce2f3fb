#pragma once
// What every reader of outside input in src/discovery gives back instead of throwing: the
// entry, or why it was turned away (a fixed reason for the metric, words for the log).
#include <optional>
#include <string>
#include <string_view>

#include "../metrics/discovery_rejections.hpp"

namespace corvid::discovery {

struct rejection {
  metrics::discovery_reject reason;
  std::string detail;  // one line, for the log
};

// An address an endpoint may have: "host:port" or "[v6]:port" with a decimal port 1..65535
// and a host of printable characters, or "unix:/path" with a path a socket address holds.
// nullopt when it may; otherwise why not (bad_address).
std::optional<rejection> check_address(std::string_view address);

}  // namespace corvid::discovery
