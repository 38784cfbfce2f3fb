#pragma once
// Which of a client's reactors the calling thread runs, for the pool and the balancer: both
// keep per-reactor state, indexed by the reactor's place in the client's io_pool.
#include <cstddef>
#include <span>

#include "corvid/detail/asio.hpp"
#include "corvid/runtime/io_pool.hpp"

namespace corvid::detail {

inline constexpr std::size_t no_reactor_index = static_cast<std::size_t>(-1);

// The index of the caller's reactor in `reactors`, or no_reactor_index: a thread of no
// io_pool, or of another one (a server's, say).
inline std::size_t caller_reactor_index(std::span<asio::io_context* const> reactors) noexcept {
  const asio::io_context* here = current_reactor();
  if (here == nullptr) return no_reactor_index;
  for (std::size_t i = 0; i < reactors.size(); ++i) {
    if (reactors[i] == here) return i;
  }
  return no_reactor_index;
}

}  // namespace corvid::detail
