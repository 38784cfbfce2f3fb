#pragma once
// Whether a server connection's peer is still there and still worth its resources: the
// timestamps behind idle_timeout, frame_read_timeout, heartbeats, write_timeout, stream
// idleness and hangup probes, when to look next, and what a look finds. The connection
// reports what happened (activity, a frame starting, a write moving) and acts on the
// answer; nothing here touches the socket. One timer per connection serves all of these: it
// is armed for the earliest and re-armed only when it fires, so the hot path never touches it.
#include <chrono>
#include <cstddef>

#include "corvid/server/server_config.hpp"

#include "../transport/heartbeat_clock.hpp"

namespace corvid::detail {

class connection_liveness {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  explicit connection_liveness(const server_config& config) noexcept : config_(config) {}

  // What the connection is doing now, as far as these limits care.
  struct view {
    bool writing = false;                 // a write is in flight
    bool paused = false;                  // admission paused it: it reads nothing
    bool paused_only_for_memory = false;  // ... and by nothing of its peer's own doing
    bool rdma = false;                    // no socket to probe
    bool streams_open = false;
    bool quiet = false;              // no call running, nothing queued or being written
    bool grown_frame_waits = false;  // a frame granted a grown buffer has not completed
    bool memory_pressed = false;     // others wait for the server's memory
    bool idle_buffer = false;        // an empty read buffer waits for bytes (plain socket)
  };
  // How long a read buffer waits empty for bytes before it goes back to the reactor's pool
  // (read_gate::release_idle). A busy connection never waits this long, so it keeps its
  // buffer and pays one timer wake-up per interval.
  static constexpr std::chrono::milliseconds buffer_idle{1000};
  // What a look at the clocks found (close, with a reason, or what to do next).
  struct finding {
    enum class close_reason : unsigned char {
      none,
      write_stalled,  // the peer stopped reading our replies
      frame_stalled,  // a frame granted memory stopped arriving while others wait
      frame_timeout,  // a frame dribbled for longer than frame_read_timeout (slowloris)
      silent,         // nothing heard for heartbeat_timeout: a half-open connection
      idle,           // idle_timeout with nothing running
    };
    close_reason close = close_reason::none;
    bool dead_peer = false;  // counted as a dead peer (transport_stats::dead_peer_closes)
    bool probe = false;      // paused: look for a FIN, and ping to provoke an RST
    bool look_at_streams = false;
    bool ping = false;            // a heartbeat is due
    bool release_buffer = false;  // the idle read buffer waited buffer_idle: give it back
  };

  bool has_time_limits() const noexcept;
  // How long a write may stall, or a granted frame stop arriving, while others wait for memory.
  std::chrono::milliseconds stall_grace() const noexcept;
  // Often while the peer itself filled its calls, replies or worker share (a flood that may
  // have hung up), rarely while it only waits for the server's memory with many others.
  std::chrono::milliseconds probe_interval(bool only_for_memory) const noexcept;
  time_point next_check(const view& v, const heartbeat_clock& clock, time_point now) const noexcept;
  time_point next_stream_look(time_point now) const noexcept;
  // The look itself, at `now`. `kernel_queue`: the socket's unsent bytes (0 on RDMA).
  // Updates the clocks it owns (and the heartbeat clock's probe and ping times).
  finding look(const view& v, heartbeat_clock& clock, std::size_t kernel_queue, time_point now);

  bool write_stalled_for(std::chrono::steady_clock::duration d, bool writing,
                         time_point now) const noexcept {
    return writing && now - write_moved >= d;
  }

  time_point last_activity{};  // last request or call end: what "idle" is measured from
  time_point frame_started{};  // first byte of the incomplete frame in the read buffer, or {}
  time_point batch_end{};      // when the last dispatched batch's handlers had run
  time_point write_moved{};    // the write in flight started or last moved bytes

 private:
  // The kernel's send queue holds bytes that have not moved for write_timeout (checked at
  // each look, so within 1.5 x write_timeout).
  bool kernel_queue_stalled(std::size_t queued, time_point now) noexcept;

  const server_config& config_;
  std::size_t kernel_queued_ = 0;    // the socket's send queue at the last look
  time_point kernel_queue_since_{};  // since when it has held that many bytes
};

}  // namespace corvid::detail
