// A server connection waiting or being checked on: paused by admission (memory waits, the
// hangup watch and probes), its liveness timer, and memory it gives back (an idle grown read
// buffer, replies its peer does not read) when others wait. docs/architecture.md, "Admission".
#include <algorithm>
#include <string>

#include "corvid/memory/buffer_pool.hpp"

#include "../runtime/asio_all.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {

connection_liveness::view server_connection::liveness_view() const noexcept {
  connection_liveness::view v;
  v.writing = writing_;
  v.paused = paused();
  v.paused_only_for_memory = adm_.paused_only_for(pause_reason::memory);
  v.rdma = stream_.is_rdma();
  v.streams_open = adm_.open_streams() != 0;
  v.quiet = running_.empty() && !writing_ && pending_.empty();
  v.grown_frame_waits = !yielded_ && !frames_.read_buffer().empty() &&
                        frames_.read_buffer().capacity() > core_.config.read_buffer_size;
  v.memory_pressed = core_.memory.pressed();
  return v;
}

void server_connection::arm_timer() {
  timer_->expires_at(
      live_.next_check(liveness_view(), frames_.clock, std::chrono::steady_clock::now()));
  timer_->async_wait([self = std::static_pointer_cast<server_connection>(shared_from_this())](
                         const std::error_code& ec) {
    if (!ec && !self->closed_) self->on_timer();
  });
}

void server_connection::on_timer() {
  const time_point now = std::chrono::steady_clock::now();
  const bool look_at_kernel = core_.config.write_timeout.count() > 0 && !writing_;
  const auto found = live_.look(liveness_view(), frames_.clock,
                                look_at_kernel ? stream_.kernel_send_queue() : 0, now);
  if (found.close != connection_liveness::finding::close_reason::none) {
    if (found.dead_peer) core_.stats.on_dead_peer();
    close();
    return;
  }
  if (found.probe) {
    // The peer's FIN waits behind the requests left unread, or never arrives at all when
    // our full receive window holds it back in the peer's kernel. poll() tells about a FIN
    // that did arrive; a ping makes a peer that closed answer with an RST (a live one
    // answers a pong), which the error watch (watch_hangup) sees at once.
    if (stream_.peer_finished()) {
      stop_reading_ = true;
      on_peer_finished();
      close_if_done();
      if (closed_) return;
    }
    if (!writing_ && pending_.empty()) {  // a write in flight is a probe of its own
      core_.stats.on_ping();
      queue_control(protocol::make_ping(0));
      flush();
    }
  }
  if (found.look_at_streams) end_idle_streams(now);
  if (found.ping) {
    core_.stats.on_ping();
    queue_control(protocol::make_ping(0));
    flush();
  }
  arm_timer();
}

void server_connection::watch_hangup() {
  if (stream_.is_rdma()) return;
  if (!error_watch_) {
    // A reset is an error event on the socket: asio reports it to a wait_error op, with no
    // read pending and no polling. Once set, the watch stays until the socket closes.
    error_watch_ = true;
    stream_.watch_error([self = std::static_pointer_cast<server_connection>(shared_from_this())](
                            const std::error_code& ec) {
      if (!ec && !self->closed_) self->close();  // the peer reset
    });
  }
  const time_point probe =
      frames_.clock.last_ping + live_.probe_interval(adm_.paused_only_for(pause_reason::memory));
  if (timer_ && timer_->expiry() > probe) recheck_at(probe);
}

void server_connection::recheck_at(time_point t) {
  if (!timer_) return;
  timer_->expires_at(t);  // cancels the wait for the regular check; on_timer re-arms that
  timer_->async_wait([self = std::static_pointer_cast<server_connection>(shared_from_this())](
                         const std::error_code& ec) {
    if (!ec && !self->closed_) self->on_timer();
  });
}

void server_connection::wait_for_memory(bool for_read, std::size_t need) {
  core_.stats.on_admission_pause();
  adm_.pause(pause_reason::memory);
  watch_hangup();
  std::weak_ptr<server_connection> weak =
      std::static_pointer_cast<server_connection>(shared_from_this());
  const bool light = for_read || mem_.stays_light(need);
  core_.memory.wait(
      [weak] {
        if (auto c = weak.lock()) asio::post(c->reactor_, [c] { c->resume_after_memory(); });
      },
      [this, for_read, need] {
        return (for_read ? mem_.read_available() : mem_.call_available()) >= need;
      },
      for_read, light, need);
}

void server_connection::resume_after_memory() {
  if (closed_ || !adm_.lift(pause_reason::memory)) return;
  if (frames_.read_buffer().capacity() == 0) {  // waited for its first read buffer
    begin_reading();
    return;
  }
  resume_dispatch();
}

void server_connection::reclaim_read_buffer() {
  holding_ = false;
  if (closed_ || !stream_.read_cancellable() || skip_ != 0 ||
      frames_.read_buffer().capacity() <= core_.config.read_buffer_size) {
    return;
  }
  if (!frames_.read_buffer().empty()) {
    // Mid-frame the buffer is in use (its batch end shrinks it while anyone waits), unless
    // the frame stopped arriving: memory granted for a frame its peer does not send is
    // taken back from a peer that stays silent for live_.stall_grace() while others wait.
    if (paused() || yielded_) return;  // the silence is ours: we stopped reading
    const time_point now = std::chrono::steady_clock::now();
    if (now - frames_.clock.last_heard >= live_.stall_grace()) {
      core_.stats.on_dead_peer();
      close();
      return;
    }
    recheck_at(frames_.clock.last_heard + live_.stall_grace());
    return;
  }
  if (reading_) {
    // Cancelling a read that has not run leaves the bytes in the kernel; if it already
    // completed, this does nothing and the batch end shrinks the buffer instead.
    reclaim_pending_ = true;
    read_cancel_.emit(asio::cancellation_type::total);
    return;
  }
  shrink_idle_read_buffer();
}

void server_connection::shrink_idle_read_buffer() {
  frames_.read_buffer().shrink_to(core_.config.read_buffer_size);
  frames_.room().cap(core_.config.read_buffer_size);   // regrow only by use
  mem_.settle_read(frames_.read_buffer().capacity());  // releases, and wakes the waiters
}

void server_connection::hold_replies() {
  if (holding_replies_ || core_.config.write_timeout.count() == 0) return;
  holding_replies_ = true;
  std::weak_ptr<server_connection> weak =
      std::static_pointer_cast<server_connection>(shared_from_this());
  core_.memory.add_holder(&holding_replies_, [weak] {
    if (auto c = weak.lock()) asio::post(c->reactor_, [c] { c->reclaim_replies(); });
  });
}

void server_connection::reclaim_replies() {
  holding_replies_ = false;
  if (closed_ || !writing_) return;
  const time_point now = std::chrono::steady_clock::now();
  if (live_.write_stalled_for(live_.stall_grace(), writing_, now)) {
    core_.stats.on_dead_peer();
    close();  // others wait for memory this peer's unread replies hold
    return;
  }
  // Moving, or not stalled long enough yet: look again when it would be, and stay known to
  // the next waiter.
  recheck_at(live_.write_moved + live_.stall_grace());
  hold_replies();
}

void server_connection::grow_for_frame(const protocol::frame_header& h) {
  const std::size_t have = frames_.read_buffer().size();
  // What the buffer holds for the whole frame: the pool's size class (exact above them).
  const std::size_t whole = buffer_pool::class_size(h.frame_size());
  // A header claims a length; only bytes received prove it. Up to read_room::max the buffer
  // grows with what arrives (at most about twice it), so a peer that sends headers and stops
  // holds next to nothing. Past that, or when speculative growth is refused, the frame is
  // granted whole: a granted frame always completes, which keeps the server from filling up
  // with partial frames that all wait for memory. A frame larger than a quarter of the read
  // memory is granted at its header, as such a grant might otherwise never fit.
  if (whole <= core_.memory.read_buffers.limit() / 4) {
    const std::size_t want = buffer_pool::class_size(std::min<std::size_t>(
        h.frame_size(), std::max({2 * have, frames_.room().get(), read_room::initial})));
    if (want <= std::max(read_room::max, frames_.read_buffer().capacity()) &&
        mem_.reserve_read_speculative(want)) {
      frames_.read_buffer().reserve(want);
      frames_.read_buffer().ensure_tail(std::min(h.frame_size(), frames_.read_buffer().capacity()) -
                                        have);
      return;
    }
  }
  if (whole > frames_.read_buffer().capacity()) {
    if (!mem_.reserve_read(whole)) {
      if (!mem_.read_could_fit(whole)) {
        // Waiting would never end. The frame is within max_frame_size, so the client sends
        // it whole: answer, and discard its bytes as they come.
        reply_error(h.request_id, rpc_errc::message_too_large,
                    "frame of " + std::to_string(h.frame_size()) +
                        " bytes exceeds the server's read-buffer memory (" +
                        std::to_string(core_.memory.read_buffers.limit()) + " bytes)");
        skip_ = h.frame_size() - have;
        frames_.read_buffer().consume(have);
        ++batch_frames_;
        return;
      }
      wait_for_memory(true, whole - frames_.read_buffer().capacity());
      return;
    }
    frames_.read_buffer().reserve(whole);
  }
  frames_.read_buffer().ensure_tail(h.frame_size() - have);
}

}  // namespace corvid::detail
