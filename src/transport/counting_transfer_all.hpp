#pragma once
// The completion condition of every gather write (socket, TLS).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <system_error>

namespace corvid::detail {

// asio::transfer_all caps each write_some at 64 KiB; this condition lets a gather write hand
// the kernel everything at once, and counts the write_some calls (one syscall each).
struct counting_transfer_all {
  std::uint64_t* writes;
  // Optional: when the peer last proved alive by draining our send buffer. A write_some
  // after a partial one only succeeds once the peer has acknowledged bytes, while a small
  // write succeeds into the kernel buffer even when the peer is gone.
  std::chrono::steady_clock::time_point* progress = nullptr;
  // Optional: when the write last moved bytes into a full send buffer (a write stalled by a
  // peer that does not read shows no such moves).
  std::chrono::steady_clock::time_point* moved = nullptr;
  // asio calls this before the first write_some and after each one that leaves bytes
  // unsent, so on success the number of calls equals the number of write_some calls.
  std::size_t operator()(const std::error_code& ec, std::size_t) const noexcept {
    ++*writes;
    if (*writes >= 2 && (moved != nullptr || (progress != nullptr && *writes >= 3))) {
      const auto now = std::chrono::steady_clock::now();
      if (moved != nullptr) *moved = now;
      if (progress != nullptr && *writes >= 3) *progress = now;
    }
    return ec ? 0 : static_cast<std::size_t>(-1) / 2;
  }
};

}  // namespace corvid::detail
