#pragma once
// When a connection last heard its peer and last pinged it, and what that means for its
// heartbeats; the same arithmetic on both sides. "Heard" is any byte read, or a write the peer
// drained (peer_drained): a peer busy reading a big reply is alive though it sends nothing.
#include <algorithm>
#include <chrono>
#include <cstdint>

namespace corvid::detail {

// A write that took more than one write call had to wait for the peer to take bytes out of
// a full send buffer: the peer is alive and reading (a first small write proves nothing, the
// kernel takes it whether or not anyone is there).
inline bool peer_drained(std::uint64_t write_calls) noexcept { return write_calls >= 2; }

struct heartbeat_clock {
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::milliseconds;

  time_point last_heard{};
  time_point last_ping{};

  void restart(time_point now) noexcept {
    last_heard = now;
    last_ping = {};
  }
  // A ping is due `interval` after the later of the last sign of life and the last ping
  // (0: never).
  time_point ping_due(duration interval) const noexcept {
    return interval.count() > 0 ? std::max(last_heard, last_ping) + interval : time_point::max();
  }
  // The peer is presumed dead `timeout` after it was last heard (0: never).
  time_point dead_at(duration timeout) const noexcept {
    return timeout.count() > 0 ? last_heard + timeout : time_point::max();
  }
  time_point next_check(duration interval, duration timeout) const noexcept {
    return std::min(ping_due(interval), dead_at(timeout));
  }
  bool silent(time_point now, duration timeout) const noexcept { return now >= dead_at(timeout); }
  // Whether to ping now; if so, counts it as sent.
  bool take_ping(time_point now, duration interval) noexcept {
    if (now < ping_due(interval)) return false;
    last_ping = now;
    return true;
  }
};

}  // namespace corvid::detail
