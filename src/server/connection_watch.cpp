// A server connection's timer and hangup watch: connection_liveness says when to look and
// what a look finds; this acts on it. docs/architecture.md, "Admission".
#include "connection_watch.hpp"

#include "corvid/detail/stream_link.hpp"
#include "corvid/server/request_context.hpp"

#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {

void connection_watch::start() {
  if (!live.has_time_limits()) return;
  timer_.emplace(c_.reactor_);
  live.last_activity = c_.frames_.clock.last_heard = std::chrono::steady_clock::now();
  arm();
}

connection_liveness::view connection_watch::view() const noexcept {
  connection_liveness::view v;
  v.writing = c_.writer().writing();
  v.paused = c_.paused();
  v.paused_only_for_memory = c_.adm_.paused_only_for(pause_reason::memory);
  v.rdma = c_.stream_.is_rdma();
  v.streams_open = c_.adm_.open_streams() != 0;
  v.quiet = c_.running_.empty() && c_.writer().idle();
  v.grown_frame_waits = c_.gate_.grown_frame_waits();
  v.memory_pressed = c_.core_.memory.pressed();
  v.idle_buffer = c_.gate_.holds_idle_buffer();
  return v;
}

void connection_watch::arm() {
  timer_->expires_at(live.next_check(view(), c_.frames_.clock, std::chrono::steady_clock::now()));
  timer_->async_wait([self = c_.self()](const std::error_code& ec) {
    if (!ec && !self->gate_.closed()) self->watch_.on_timer();
  });
}

void connection_watch::on_timer() {
  const time_point now = std::chrono::steady_clock::now();
  const bool writing = c_.writer().writing();
  const bool look_at_kernel = c_.core_.config.write_timeout.count() > 0 && !writing;
  const auto found =
      live.look(view(), c_.frames_.clock, look_at_kernel ? c_.stream_.kernel_send_queue() : 0, now);
  if (found.close != connection_liveness::finding::close_reason::none) {
    if (found.dead_peer) c_.core_.stats.on_dead_peer();
    c_.close();
    return;
  }
  if (found.probe) {
    // The peer's FIN waits behind the requests left unread, or never arrives at all when
    // our full receive window holds it back in the peer's kernel. poll() tells about a FIN
    // that did arrive; a ping makes a peer that closed answer with an RST (a live one
    // answers a pong), which the error watch (watch_hangup) sees at once.
    if (c_.stream_.peer_finished()) {
      c_.gate_.stop();
      c_.on_peer_finished();
      c_.close_if_done();
      if (c_.gate_.closed()) return;
    }
    if (c_.writer().idle()) ping();  // a write in flight is a probe of its own
  }
  if (found.look_at_streams) end_idle_streams(now);
  if (found.release_buffer) c_.gate_.release_idle();  // which checks that it still holds one
  if (found.ping) ping();
  arm();
}

void connection_watch::ping() {
  c_.core_.stats.on_ping();
  c_.writer().queue_control(protocol::make_ping(0));  // written at once: no batch is running
}

void connection_watch::watch_hangup() {
  if (c_.stream_.is_rdma()) return;
  if (!error_watch_) {
    // A reset is an error event on the socket: asio reports it to a wait_error op, with no
    // read pending and no polling. Once set, the watch stays until the socket closes.
    error_watch_ = true;
    c_.stream_.watch_error([self = c_.self()](const std::error_code& ec) {
      if (!ec && !self->gate_.closed()) self->close();  // the peer reset
    });
  }
  const time_point probe = c_.frames_.clock.last_ping +
                           live.probe_interval(c_.adm_.paused_only_for(pause_reason::memory));
  if (timer_ && timer_->expiry() > probe) recheck_at(probe);
}

void connection_watch::stream_opened() {
  // Its idle check: the regular one may be armed for later than a quarter of the limit.
  if (c_.core_.config.stream_idle_timeout.count() > 0 && timer_) {
    const time_point look = live.next_stream_look(std::chrono::steady_clock::now());
    if (look < timer_->expiry()) recheck_at(look);
  }
}

void connection_watch::recheck_at(time_point t) {
  if (!timer_) return;
  timer_->expires_at(t);  // cancels the wait for the regular check; on_timer re-arms that
  timer_->async_wait([self = c_.self()](const std::error_code& ec) {
    if (!ec && !self->gate_.closed()) self->watch_.on_timer();
  });
}

void connection_watch::buffer_taken() {
  const time_point look = std::chrono::steady_clock::now() + connection_liveness::buffer_idle;
  if (timer_ && look < timer_->expiry()) recheck_at(look);
}

void connection_watch::end_idle_streams(time_point now) {
  const auto limit = c_.core_.config.stream_idle_timeout;
  bool ended = false;
  c_.running_.for_each([&](request_context* rc) {
    stream_link* s = request_context_access::stream(*rc);
    if (s == nullptr || rc->cancelled()) return;
    if (s->moved != s->moved_at_look || s->still_since == time_point{}) {
      s->moved_at_look = s->moved;
      s->still_since = now;
    } else if (now - s->still_since >= limit) {
      s->on_idle(limit);
      ended = true;
    }
  });
  if (ended) c_.writer().flush();
}

void connection_watch::closed() noexcept {
  if (timer_) timer_->cancel();
}

}  // namespace corvid::detail
