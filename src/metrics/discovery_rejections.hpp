#pragma once
// Why an endpoint source (src/discovery) turned an entry away: a registry value, a line of an
// endpoints file, a DNS answer, or a key past the source's bound. A fixed set, so the label
// corvid_discovery_rejected_total{reason} has a fixed number of values whatever the input.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace corvid::metrics {

enum class discovery_reject : std::uint8_t {
  not_json,     // a registry value or a registry answer that is not a JSON object
  bad_field,    // a field missing or of the wrong type or range
  bad_address,  // an address that is not host:port (port 1..65535) or unix:/path
  too_large,    // a value over lb_config::max_registry_value_bytes, or an answer over its cap
  over_limit,   // past the number of entries a source or balancer follows
};
inline constexpr std::size_t discovery_reject_count = 5;

constexpr const char* to_string(discovery_reject r) noexcept {
  switch (r) {
    case discovery_reject::not_json:
      return "not_json";
    case discovery_reject::bad_field:
      return "bad_field";
    case discovery_reject::bad_address:
      return "bad_address";
    case discovery_reject::too_large:
      return "too_large";
    case discovery_reject::over_limit:
      return "over_limit";
  }
  return "unknown";
}

// The counts, by reason (client_registry holds one).
struct discovery_rejections {
  std::array<std::atomic<std::uint64_t>, discovery_reject_count> counts{};
  void add(discovery_reject r, std::uint64_t n = 1) noexcept {
    counts[static_cast<std::size_t>(r)].fetch_add(n, std::memory_order_relaxed);
  }
  std::array<std::uint64_t, discovery_reject_count> load() const noexcept {
    std::array<std::uint64_t, discovery_reject_count> out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = counts[i].load(std::memory_order_relaxed);
    return out;
  }
};

}  // namespace corvid::metrics
