#include "connection_liveness.hpp"

#include <algorithm>

namespace corvid::detail {
namespace {
// How often a paused connection probes whether its peer has gone: often when the peer
// itself filled its calls or replies (a flood that may have hung up), rarely when it waits
// for the server's memory with many others (a reset is seen at once anyway).
constexpr std::chrono::milliseconds hangup_probe{500};
constexpr std::chrono::milliseconds hangup_probe_memory{5000};
}  // namespace

bool connection_liveness::has_time_limits() const noexcept {
  const server_config& c = config_;
  return c.idle_timeout.count() > 0 || c.frame_read_timeout.count() > 0 ||
         c.heartbeat_interval.count() > 0 || c.heartbeat_timeout.count() > 0 ||
         c.write_timeout.count() > 0 || c.stream_idle_timeout.count() > 0;
}

std::chrono::milliseconds connection_liveness::stall_grace() const noexcept {
  constexpr std::chrono::milliseconds most{1000};
  const auto w = config_.write_timeout;
  return w.count() > 0 ? std::min(w / 10, most) : most;
}

std::chrono::milliseconds connection_liveness::probe_interval(bool only_for_memory) const noexcept {
  return only_for_memory ? hangup_probe_memory : hangup_probe;
}

connection_liveness::time_point connection_liveness::next_stream_look(
    time_point now) const noexcept {
  return now + std::max(config_.stream_idle_timeout / 4, std::chrono::milliseconds(1));
}

connection_liveness::time_point connection_liveness::next_check(const view& v,
                                                                const heartbeat_clock& clock,
                                                                time_point now) const noexcept {
  const server_config& c = config_;
  time_point t = time_point::max();
  if (c.idle_timeout.count() > 0) t = std::min(t, last_activity + c.idle_timeout);
  if (c.frame_read_timeout.count() > 0 && frame_started != time_point{}) {
    t = std::min(t, frame_started + c.frame_read_timeout);
  }
  t = std::min(t, clock.next_check(c.heartbeat_interval, c.heartbeat_timeout));
  if (v.idle_buffer) t = std::min(t, clock.last_heard + buffer_idle);
  if (c.write_timeout.count() > 0) {
    // A write starts without re-arming the timer (the hot path never touches it), so a
    // stalled write is seen within half a write_timeout after it began, and closed by
    // 1.5 x write_timeout at the latest.
    if (v.writing) t = std::min(t, write_moved + c.write_timeout);
    t = std::min(t, now + c.write_timeout / 2);
  }
  if (c.stream_idle_timeout.count() > 0 && v.streams_open) t = std::min(t, next_stream_look(now));
  // A frame may start later: look again within frame_read_timeout.
  if (c.frame_read_timeout.count() > 0) t = std::min(t, now + c.frame_read_timeout);
  // Paused by a limit, the connection reads nothing, so it would not see its peer leave.
  if (v.paused && !v.rdma)
    t = std::min(t, clock.last_ping + probe_interval(v.paused_only_for_memory));
  return t;
}

bool connection_liveness::kernel_queue_stalled(std::size_t queued, time_point now) noexcept {
  // Replies our write handed to the kernel wait in the socket's send queue: a peer that
  // reads none of them leaves it unchanged, with megabytes of kernel memory held. A few
  // unacknowledged bytes (a segment in retransmission) hold nothing worth a close.
  constexpr std::size_t worth_closing = 64 * 1024;
  if (queued < worth_closing) {
    kernel_queued_ = 0;
    return false;
  }
  if (queued != kernel_queued_) {
    kernel_queued_ = queued;
    kernel_queue_since_ = now;
    return false;
  }
  return now - kernel_queue_since_ >= config_.write_timeout;
}

connection_liveness::finding connection_liveness::look(const view& v, heartbeat_clock& clock,
                                                       std::size_t kernel_queue, time_point now) {
  using reason = finding::close_reason;
  const server_config& c = config_;
  finding f;
  if (c.write_timeout.count() > 0 &&
      (write_stalled_for(c.write_timeout, v.writing, now) ||
       (v.memory_pressed && write_stalled_for(stall_grace(), v.writing, now)) ||
       (!v.writing && kernel_queue_stalled(kernel_queue, now)))) {
    f.close = reason::write_stalled;  // its memory goes back
    f.dead_peer = true;
    return f;
  }
  // (Not while paused: then the frames wait in our buffer and the silence is ours.)
  if (!v.paused && v.grown_frame_waits && v.memory_pressed &&
      now - clock.last_heard >= stall_grace()) {
    f.close = reason::frame_stalled;
    f.dead_peer = true;
    return f;
  }
  if (v.paused && !v.rdma && now - clock.last_ping >= probe_interval(v.paused_only_for_memory)) {
    f.probe = true;
    clock.last_ping = now;  // the next probe is due from now, ping or not
  }
  if (v.paused) {
    // Paused by a limit of this server: what the peer sends waits in the kernel, so a frame
    // not progressing and a peer not heard are our doing. The clocks restart (a peer that
    // does not read is caught by write_timeout above).
    if (frame_started != time_point{}) frame_started = now;
    clock.last_heard = now;
  }
  if (c.frame_read_timeout.count() > 0 && frame_started != time_point{} &&
      now >= frame_started + c.frame_read_timeout) {
    f.close = reason::frame_timeout;  // a slowloris peer may not read an error reply either
    return f;
  }
  if (clock.silent(now, c.heartbeat_timeout)) {
    f.close = reason::silent;  // nothing heard, not even a pong
    f.dead_peer = true;
    return f;
  }
  if (c.idle_timeout.count() > 0 && now >= last_activity + c.idle_timeout) {
    if (v.quiet) {
      f.close = reason::idle;
      return f;
    }
    last_activity = now;  // busy: idle counts from now
  }
  f.release_buffer = v.idle_buffer && now - clock.last_heard >= buffer_idle;
  f.look_at_streams = c.stream_idle_timeout.count() > 0 && v.streams_open;
  f.ping = clock.take_ping(now, c.heartbeat_interval);
  return f;
}

}  // namespace corvid::detail
