#pragma once
// What /connections and the status page show of one connection, written by its reactor and
// read by a scrape (single-writer counters, counter.hpp).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "counter.hpp"

namespace corvid::metrics {

enum class transport_kind : std::uint8_t { tcp, unix_socket, tls, rdma };
inline constexpr std::size_t transport_count = 4;

constexpr std::string_view to_string(transport_kind t) noexcept {
  switch (t) {
    case transport_kind::tcp:
      return "tcp";
    case transport_kind::unix_socket:
      return "unix";
    case transport_kind::tls:
      return "tls";
    case transport_kind::rdma:
      return "rdma";
  }
  return "tcp";
}

struct connection_stats {
  std::atomic<transport_kind> transport{transport_kind::tcp};
  counter bytes_received, bytes_sent, calls;
  std::atomic<std::uint32_t> calls_in_flight{0};  // coroutine calls running
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();
};

}  // namespace corvid::metrics
