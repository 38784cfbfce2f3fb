#include "stream_mux.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace corvid::detail {

std::size_t stream_mux::window() const noexcept {
  return std::clamp<std::size_t>(config_.stream_window, 1, UINT32_MAX);
}

std::size_t stream_mux::max_window() const noexcept {
  return std::clamp<std::size_t>(config_.max_stream_window, window(), UINT32_MAX);
}

std::size_t stream_mux::reserve_growth(std::size_t bytes) noexcept {
  // With the defaults (512 streams of 256 KiB, 256 MiB) all windows together stay within
  // the connection's call memory, so windows that grew never make the connection wait for
  // memory that only their own handlers' reading would free.
  const std::size_t budget = config_.max_call_bytes_per_connection / 4;
  std::size_t used = growth_.load(std::memory_order_relaxed);
  std::size_t take = 0;
  do {
    take = used >= budget ? 0 : std::min(bytes, budget - used);
    if (take == 0) return 0;
  } while (!growth_.compare_exchange_weak(used, used + take, std::memory_order_relaxed));
  return take;
}

void stream_mux::wake_writable() {
  auto waiters = std::move(writable_);
  writable_.clear();
  for (stream_link* link : waiters) link->on_writable();
}

void stream_mux::tell(std::vector<stream_link*>& links) noexcept {
  for (stream_link* link : links) link->on_written();
  links.clear();
}

}  // namespace corvid::detail
