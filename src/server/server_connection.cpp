#include "server_connection.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <stdexcept>

#include <asio/post.hpp>

#include "corvid/codec/codec.hpp"
#include "corvid/detail/stream_link.hpp"
#include "corvid/memory/buffer_pool.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/trace/span.hpp"

#include "../admin/admin_session.hpp"
#include "../admission/shared_slots.hpp"
#include "../protocol/trace_prefix.hpp"
#include "../rdma/handshake.hpp"
#include "../transport/tls_context.hpp"
#include "server_core.hpp"
#include <sys/socket.h>

namespace corvid::detail {
namespace {
// Error messages (a handler's what() included) are cut to this: an error frame is charged
// by force, so its size must be bounded.
constexpr std::size_t max_error_message = 4096;
// Reply bytes one batch may queue before it yields its reactor: the frames left in the
// buffer go on in a post, after the events of the reactor's other connections. Without it,
// a peer whose requests piled up while the reactor was busy (big replies, slow handlers)
// takes the reactor for the whole pile, and every other connection on it waits that long.
constexpr std::size_t turn_budget = 256 * 1024;
// How often a paused connection looks whether its peer has gone (FIN or RST).
// How often a paused connection probes whether its peer has gone (see on_timer): often
// when the peer itself filled its calls or replies (a flood that may have hung up), rarely
// when it waits for the server's memory with many others (a reset is seen at once anyway).
constexpr std::chrono::milliseconds hangup_probe{500};
constexpr std::chrono::milliseconds hangup_probe_memory{5000};
}  // namespace

server_connection::server_connection(server_core& core,
                                     asio::generic::stream_protocol::socket socket,
                                     std::string peer)
    : core_(core),
      reactor_(static_cast<asio::io_context&>(socket.get_executor().context())),
      stream_(std::move(socket)),
      peer_(std::move(peer)),
      adm_(core.memory, core.config, peer_),
      mem_(adm_.memory()) {
  if (core.metrics) metrics_.attach(&core.metrics->shard(core.reactor_index(reactor_)));
  std::error_code ec;
  if (stream_.socket().local_endpoint(ec).protocol().family() == AF_UNIX) {
    metrics_.connection().transport = metrics::transport_kind::unix_socket;
  }
}

void server_connection::start() {
  if (has_time_limits()) {
    timer_.emplace(reactor_);
    last_activity_ = frames_.clock.last_heard = std::chrono::steady_clock::now();
    arm_timer();
  }
  auto tls = core_.tls();
  if (tls || core_.config.http_admin) {  // the first byte tells TLS and HTTP from corvid
    if (!enter_pre_auth(tls != nullptr)) {
      core_.stats.on_pre_auth_refusal();
      close();  // no place or budget: a TLS or HTTP peer could not read a corvid error
      return;
    }
    begin_tls(std::move(tls));
    return;
  }
  begin_reading();
}

bool server_connection::enter_pre_auth(bool tls) {
  pre_auth_ = core_.pre_auth->take(peer_key(stream_.socket()));
  if (!pre_auth_ || !mem_.reserve_pre_auth(sizeof(*this), peer_)) return false;
  const auto limit = tls ? core_.tls()->config.handshake_timeout : core_.config.frame_read_timeout;
  if (limit.count() > 0) {
    pre_auth_deadline_.emplace(reactor_);
    pre_auth_deadline_->expires_after(limit);
    pre_auth_deadline_->async_wait([self = std::static_pointer_cast<server_connection>(
                                        shared_from_this())](const std::error_code& ec) {
      if (ec || !self->pre_auth_) return;
      self->pre_auth_expired_ = true;
      std::error_code ignored;
      self->stream_.socket().close(ignored);  // the wait or handshake ends with an error
    });
  }
  return true;
}

bool server_connection::end_pre_auth(bool as_tls) {
  pre_auth_.reset();
  if (pre_auth_deadline_) pre_auth_deadline_->cancel();
  return mem_.end_pre_auth(as_tls, peer_);
}

void server_connection::begin_reading() {
  // Read buffers come from the reactors' pools: connection churn does not reach malloc, and
  // neither does a buffer growing for a big frame and shrinking back (up to 256 KiB). It is
  // charged before it is taken; without room the connection waits for read memory.
  const std::size_t size = buffer_pool::class_size(core_.config.read_buffer_size);
  if (!mem_.reserve_read(size)) {
    wait_for_memory(true, size);
    return;
  }
  const auto block = buffer_pool::for_this_thread().acquire(size);
  frames_.read_buffer().adopt_storage(block.data, block.capacity);
  frames_.read_buffer().draw_from_thread_pool();
  mem_.settle_read(frames_.read_buffer().capacity());
  read_more();
}

void server_connection::begin_tls(std::shared_ptr<const server_tls> tls) {
  auto self = std::static_pointer_cast<server_connection>(shared_from_this());
  stream_.socket().async_wait(asio::socket_base::wait_read,
                              [self, tls = std::move(tls)](const std::error_code& ec) {
                                if (ec || self->closed_) {
                                  self->close();
                                  return;
                                }
                                self->on_first_byte(tls);
                              });
}

void server_connection::on_first_byte(const std::shared_ptr<const server_tls>& tls) {
  unsigned char first = 0;
  const ssize_t n = ::recv(stream_.socket().native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    begin_tls(tls);  // a readiness report with nothing to read (spurious wake-up): wait again
    return;
  }
  if (n <= 0) {
    close();  // gone before saying anything (or an error)
    return;
  }
  if (core_.config.http_admin && admin::looks_like_http(first)) {
    end_pre_auth(false);  // the admin session has places and a budget of its own
    admin::serve(core_, std::move(stream_.socket()));  // GET or HEAD: the admin pages
    close();
    return;
  }
  if (tls && first == tls_handshake_record) {
    handshake(tls);
    return;
  }
  end_pre_auth(false);
  if (!tls || tls->config.allow_plaintext) {
    begin_reading();  // a plaintext client (served as before TLS was on)
    return;
  }
  // Said in plaintext, so a plaintext corvid client reads why it is refused.
  refuse_with(rpc_errc::protocol_error,
              "this server requires TLS (rpc_client::init_tls or client_config::tls)");
}

void server_connection::handshake(std::shared_ptr<const server_tls> tls) {
  // Charged to the pre-authentication budget until the handshake completes.
  if (!mem_.reserve_pre_auth(tls_channel::memory_bytes, peer_)) {
    core_.stats.on_pre_auth_refusal();
    close();  // no memory for another TLS session; a TLS client cannot read a plaintext error
    return;
  }
  stream_.start_tls(tls->context, true);
  stream_.tls().set_budget(mem_.pre_auth_tracker());
  auto self = std::static_pointer_cast<server_connection>(shared_from_this());
  stream_.tls().async_handshake([self, tls = std::move(tls)](const std::error_code& ec) {
    const bool timed_out = self->pre_auth_expired_;
    if (self->closed_) return;
    if (ec) {
      if (tls->config.on_handshake_error) {
        const std::string why =
            timed_out ? "no TLS handshake within " +
                            std::to_string(tls->config.handshake_timeout.count()) + " ms"
                      : describe_tls_failure(ec, self->stream_.tls_verify_result());
        tls->config.on_handshake_error(self->peer_,
                                       {rpc_errc::connect_failed, "TLS handshake failed: " + why});
      }
      self->close();
      return;
    }
    // Authenticated: its session is an established one's now, charged like one.
    if (!self->end_pre_auth(true)) {
      self->close();
      return;
    }
    self->stream_.tls().set_budget(self->mem_.tls_tracker());
    self->metrics_.connection().transport = metrics::transport_kind::tls;
    self->begin_reading();
  });
}

void server_connection::refuse(std::string reason) { refuse_with(rpc_errc::server_busy, reason); }

void server_connection::refuse_with(rpc_errc code, std::string_view reason) {
  fail(0, code, reason);
  flush();
}

bool server_connection::has_time_limits() const noexcept {
  const server_config& c = core_.config;
  return c.idle_timeout.count() > 0 || c.frame_read_timeout.count() > 0 ||
         c.heartbeat_interval.count() > 0 || c.heartbeat_timeout.count() > 0 ||
         c.write_timeout.count() > 0 || c.stream_idle_timeout.count() > 0;
}

std::chrono::milliseconds server_connection::stall_grace() const noexcept {
  constexpr std::chrono::milliseconds most{1000};
  const auto w = core_.config.write_timeout;
  return w.count() > 0 ? std::min(w / 10, most) : most;
}

std::chrono::steady_clock::time_point server_connection::next_check() const noexcept {
  const server_config& c = core_.config;
  time_point t = time_point::max();
  if (c.idle_timeout.count() > 0) t = std::min(t, last_activity_ + c.idle_timeout);
  if (c.frame_read_timeout.count() > 0 && frame_started_ != time_point{}) {
    t = std::min(t, frame_started_ + c.frame_read_timeout);
  }
  t = std::min(t, frames_.clock.next_check(c.heartbeat_interval, c.heartbeat_timeout));
  const time_point now = std::chrono::steady_clock::now();
  if (c.write_timeout.count() > 0) {
    // A write starts without re-arming the timer (the hot path never touches it), so a
    // stalled write is seen within half a write_timeout after it began, and closed by
    // 1.5 x write_timeout at the latest.
    if (writing_) t = std::min(t, write_moved_ + c.write_timeout);
    t = std::min(t, now + c.write_timeout / 2);
  }
  if (c.stream_idle_timeout.count() > 0 && adm_.open_streams() != 0)
    t = std::min(t, next_stream_look(now));
  // A frame may start later: look again within frame_read_timeout.
  if (c.frame_read_timeout.count() > 0) t = std::min(t, now + c.frame_read_timeout);
  // Paused by a limit, the connection reads nothing, so it would not see its peer leave.
  if (paused() && !stream_.is_rdma()) t = std::min(t, frames_.clock.last_ping + probe_interval());
  return t;
}

void server_connection::arm_timer() {
  timer_->expires_at(next_check());
  timer_->async_wait([self = std::static_pointer_cast<server_connection>(shared_from_this())](
                         const std::error_code& ec) {
    if (!ec && !self->closed_) self->on_timer();
  });
}

void server_connection::on_timer() {
  const server_config& c = core_.config;
  const time_point now = std::chrono::steady_clock::now();
  if (c.write_timeout.count() > 0 &&
      (write_stalled_for(c.write_timeout, now) ||
       (core_.memory.pressed() && write_stalled_for(stall_grace(), now)) ||
       kernel_queue_stalled(now))) {
    core_.stats.on_dead_peer();
    close();  // the peer stopped reading our replies: its memory goes back
    return;
  }
  // (Not while paused: then the frames wait in our buffer and the silence is ours.)
  if (!paused() && !yielded_ && !frames_.read_buffer().empty() &&
      frames_.read_buffer().capacity() > core_.config.read_buffer_size && core_.memory.pressed() &&
      now - frames_.clock.last_heard >= stall_grace()) {
    core_.stats.on_dead_peer();
    close();  // a frame granted memory stopped arriving while others wait for memory
    return;
  }
  if (paused() && !stream_.is_rdma() && now - frames_.clock.last_ping >= probe_interval()) {
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
    frames_.clock.last_ping = now;  // the next probe is due hangup_probe from now, ping or not
    if (!writing_ && pending_.empty()) {  // a write in flight is a probe of its own
      core_.stats.on_ping();
      queue_control(protocol::msg_type::ping, 0);
      flush();
    }
  }
  if (paused()) {
    // Paused by a limit of this server: what the peer sends waits in the kernel, so a frame
    // not progressing and a peer not heard are our doing. The clocks restart (a peer that
    // does not read is caught by write_timeout above).
    if (frame_started_ != time_point{}) frame_started_ = now;
    frames_.clock.last_heard = now;
  }
  if (c.frame_read_timeout.count() > 0 && frame_started_ != time_point{} &&
      now >= frame_started_ + c.frame_read_timeout) {
    close();  // a peer dribbling a frame (slowloris) may not read an error reply either
    return;
  }
  if (frames_.clock.silent(now, c.heartbeat_timeout)) {
    core_.stats.on_dead_peer();
    close();  // nothing heard, not even a pong: the peer is gone (half-open connection)
    return;
  }
  if (c.idle_timeout.count() > 0 && now >= last_activity_ + c.idle_timeout) {
    if (running_.empty() && !writing_ && pending_.empty()) {
      close();
      return;
    }
    last_activity_ = now;  // busy: idle counts from now
  }
  if (c.stream_idle_timeout.count() > 0 && adm_.open_streams() != 0) end_idle_streams(now);
  if (frames_.clock.take_ping(now, c.heartbeat_interval)) {
    core_.stats.on_ping();
    queue_control(protocol::msg_type::ping, 0);
    flush();
  }
  arm_timer();
}

std::chrono::steady_clock::time_point server_connection::next_stream_look(
    time_point now) const noexcept {
  return now + std::max(core_.config.stream_idle_timeout / 4, std::chrono::milliseconds(1));
}

void server_connection::end_idle_streams(time_point now) {
  const auto limit = core_.config.stream_idle_timeout;
  bool ended = false;
  running_.for_each([&](request_context* c) {
    stream_link* s = request_context_access::stream(*c);
    if (s == nullptr || c->cancelled()) return;
    if (s->moved != s->moved_at_look || s->still_since == time_point{}) {
      s->moved_at_look = s->moved;
      s->still_since = now;
    } else if (now - s->still_since >= limit) {
      s->on_idle(limit);
      ended = true;
    }
  });
  if (ended) flush();
}

void server_connection::read_more() {
  if (closed_ || stop_reading_ || reading_ || rdma_next_ || paused()) return;
  if (yielded_) {  // the rest of the buffer first, on the reactor's next turn
    if (!std::exchange(yield_posted_, true)) {
      asio::post(reactor_,
                 [self = std::static_pointer_cast<server_connection>(shared_from_this())] {
                   self->yield_posted_ = false;
                   // Another resume may have taken the frames meanwhile (and read on): then
                   // nothing.
                   if (!std::exchange(self->yielded_, false)) return;
                   self->resume_dispatch();
                 });
    }
    return;
  }
  if (mem_.replies_full(queued_reply_bytes())) {
    // The client sends but does not read: read none of its requests until writes drain.
    core_.stats.on_admission_pause();
    adm_.pause(pause_reason::replies);
    watch_hangup();
    return;
  }
  byte_buffer& buf = frames_.read_buffer();
  // Growing the read room is reserved first; without memory the current buffer must do.
  if (frames_.room().get() > buf.capacity() &&
      !mem_.reserve_read_speculative(frames_.room().get())) {
    frames_.room().cap(buf.capacity());
  }
  const std::size_t free_room = buf.capacity() - buf.size();
  frames_.prepare_read(std::clamp<std::size_t>(free_room, 1, read_room::initial));
  mem_.settle_read(buf.capacity());
  reading_ = true;
  auto done = [self = std::static_pointer_cast<server_connection>(shared_from_this())](
                  const std::error_code& ec, std::size_t n) {
    self->on_read(ec, n);
  };
  frames_.read(stream_, stream_.read_cancellable() ? &read_cancel_ : nullptr, std::move(done));
}

void server_connection::on_read(const std::error_code& ec, std::size_t n) {
  reading_ = false;
  // asio leaves a completed op's cancellation handler in the slot; a later emit must not
  // reach it.
  if (stream_.read_cancellable()) read_cancel_.slot().clear();
  const bool reclaimed = std::exchange(reclaim_pending_, false);
  if (closed_) return;
  if (reclaimed && ec == asio::error::operation_aborted) {  // nothing was read
    shrink_idle_read_buffer();
    read_more();
    return;
  }
  if (ec) {
    stop_reading_ = true;
    if (ec != asio::error::eof) {
      close();
      return;
    }
    // EOF: the peer sends nothing more. Its running calls are cancelled and their memory
    // returned (a client that half-closed may still read what is already queued).
    on_peer_finished();
    close_if_done();
    return;
  }
  if (stop_reading_) {  // draining: requests that arrive now are not started
    close_if_done();
    return;
  }
  read_time_ = std::chrono::steady_clock::now();  // deadlines count from arrival
  frames_.commit_read(n, core_.stats, read_time_);
  metrics_.received(n);
  const bool ok = process_frames();
  flush(batch_end_);
  settle_replies();
  if (ok) read_more();
  close_if_done();
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
    // taken back from a peer that stays silent for stall_grace() while others wait.
    if (paused() || yielded_) return;  // the silence is ours: we stopped reading
    const time_point now = std::chrono::steady_clock::now();
    if (now - frames_.clock.last_heard >= stall_grace()) {
      core_.stats.on_dead_peer();
      close();
      return;
    }
    recheck_at(frames_.clock.last_heard + stall_grace());
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

void server_connection::on_peer_finished() {
  peer_finished_ = true;
  cancel_all_running();
}

bool server_connection::kernel_queue_stalled(time_point now) noexcept {
  // Replies our write handed to the kernel wait in the socket's send queue: a peer that
  // reads none of them leaves it unchanged, with megabytes of kernel memory held. A few
  // unacknowledged bytes (a segment in retransmission) hold nothing worth a close.
  constexpr std::size_t worth_closing = 64 * 1024;
  if (writing_) return false;
  const std::size_t queued = stream_.kernel_send_queue();  // 0 on RDMA
  if (queued < worth_closing) {
    kernel_queued_ = 0;
    return false;
  }
  if (queued != kernel_queued_) {
    kernel_queued_ = queued;
    kernel_queue_since_ = now;
    return false;
  }
  return now - kernel_queue_since_ >= core_.config.write_timeout;
}

std::chrono::milliseconds server_connection::probe_interval() const noexcept {
  return adm_.paused_for(pause_reason::memory) ? hangup_probe_memory : hangup_probe;
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
  const time_point probe = frames_.clock.last_ping + probe_interval();
  if (timer_ && timer_->expiry() > probe) recheck_at(probe);
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

void server_connection::resume_dispatch() {
  if (closed_ || paused()) return;
  if (stop_reading_) {  // draining: frames still buffered are not started
    close_if_done();
    return;
  }
  const bool ok = process_frames();  // what waited in the buffer, then read on
  flush(batch_end_);
  settle_replies();
  if (ok) read_more();
  close_if_done();
}

bool server_connection::process_frames() {
  dispatching_ = true;
  batch_start_bytes_ = pending_.size();
  yielded_ = false;
  batch_frames_ = 0;
  batch_requests_ = false;
  byte_buffer& buf = frames_.read_buffer();
  if (skip_ != 0) {  // the rest of a refused frame
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(skip_, buf.size()));
    buf.consume(n);
    skip_ -= n;
  }
  bool ok = true;
  if (skip_ == 0) {
    request_role role{*this};
    ok = frames_.process(role);
  }
  dispatching_ = false;
  if (timer_) {
    const time_point now = std::chrono::steady_clock::now();  // after the handlers ran
    batch_end_ = now;
    if (batch_requests_) last_activity_ = now;
    const bool partial = !buf.empty() || skip_ != 0;  // a frame is still arriving
    if (partial && frame_started_ == time_point{}) frame_started_ = now;
    if (!partial) frame_started_ = {};
  }
  metrics_.end_batch(timer_ ? batch_end_ : time_point{});  // the calls answered in this batch
  core_.stats.on_frames_received(batch_frames_);
  frames_.end_batch(core_.config.read_buffer_size, core_.memory.has_waiters());
  mem_.end_batch();
  mem_.settle_read(buf.capacity());
  if (!holding_ && stream_.read_cancellable() && buf.capacity() > core_.config.read_buffer_size) {
    holding_ = true;  // until reclaimed: then registered again by a later batch
    std::weak_ptr<server_connection> weak =
        std::static_pointer_cast<server_connection>(shared_from_this());
    core_.memory.add_holder(this, [weak] {
      if (auto c = weak.lock()) asio::post(c->reactor_, [c] { c->reclaim_read_buffer(); });
    });
  }
  return ok;
}

std::uint32_t server_connection::request_role::max_frame_size() const noexcept {
  return c.core_.config.max_frame_size;
}

void server_connection::request_role::on_bad_frame(const protocol::frame_header& h,
                                                   protocol::header_errc e) {
  const std::string why = describe_bad_header(e, h, c.core_.config.max_frame_size, "frame",
                                              "the server limit of", "a request frame");
  if (e == protocol::header_errc::too_large) {
    c.fail(h.request_id, rpc_errc::message_too_large, why);
  } else {
    c.fail(0, rpc_errc::protocol_error, why);
  }
}

void server_connection::request_role::on_partial_frame(const protocol::frame_header& h) {
  c.grow_for_frame(h);
}

frame_verdict server_connection::request_role::on_frame(const protocol::frame_header& h,
                                                        const char* payload) {
  frame_verdict v = frame_verdict::next;
  if (h.type == protocol::msg_type::request) [[likely]] {
    bool ok = true;
    try {
      if (!c.admit_request(h, payload, ok)) return ok ? frame_verdict::hold : frame_verdict::fail;
    } catch (...) {
      // Out of memory in our own bookkeeping (handlers' and decoders' exceptions are
      // answered where they happen): this connection cannot keep its replies consistent.
      c.mem_.return_admitted();
      c.close();
      return frame_verdict::fail;
    }
    c.batch_requests_ = true;
    ++c.batch_frames_;
  } else if (h.type >= protocol::msg_type::stream_item) {
    if (!c.on_stream_frame(h, payload)) return frame_verdict::hold;
    ++c.batch_frames_;
    c.batch_requests_ = true;
  } else if (h.type == protocol::msg_type::rdma_setup) {
    c.on_rdma_setup(h, payload);
    v = frame_verdict::last;  // the client sends nothing more on this socket
  } else {
    c.on_control(h);
  }
  c.frame_started_ = {};  // whatever follows started arriving with this batch
  // (Only with another frame behind this one: an empty continuation would look like a batch
  // that held no big frame and shrink the buffer.)
  if (c.pending_.size() > c.batch_start_bytes_ + turn_budget && v == frame_verdict::next &&
      c.frames_.read_buffer().size() >= h.frame_size() + protocol::header_size) [[unlikely]] {
    c.yielded_ = true;
    v = frame_verdict::last;
  }
  return v;
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

bool server_connection::admit_request(const protocol::frame_header& h, const char* payload,
                                      bool& ok) {
  const handler_entry* entry = core_.find(h.function_id);
  const bool blocking = entry != nullptr && entry->blocking;
  const bool duplicate = running_.find(h.request_id) != nullptr;
  if (adm_.admits_request(h, duplicate, blocking, queued_reply_bytes())) [[likely]] {
    served_request_ = true;
    dispatch(h, payload, entry);
    mem_.return_admitted();  // unless a coroutine call took the bytes
    return true;
  }
  return act_on(adm_.decide_request(h, duplicate, blocking, queued_reply_bytes()), h, payload,
                entry, ok);
}

bool server_connection::act_on(verdict v, const protocol::frame_header& h, const char* payload,
                               const handler_entry* entry, bool& ok) {
  switch (v.what) {
    case verdict::kind::admit:
      served_request_ = true;
      dispatch(h, payload, entry);
      mem_.return_admitted();
      return true;
    case verdict::kind::refuse:
      reply_error(h.request_id, v.code, v.message);
      return true;
    case verdict::kind::fail:
      fail(0, v.code, v.message);
      ok = false;
      return false;
    case verdict::kind::pause:
      break;
  }
  pause_for(v);
  return false;
}

void server_connection::pause_for(const verdict& v) {
  if (v.reason == pause_reason::memory) {
    wait_for_memory(false, v.need);
    return;
  }
  core_.stats.on_admission_pause();
  switch (v.reason) {
    case pause_reason::memory:
      break;
    case pause_reason::replies:
      adm_.pause(v.reason);  // on_write resumes
      hold_replies();
      break;
    case pause_reason::calls:
    case pause_reason::workers:
      adm_.pause(v.reason);  // call_finished resumes
      break;
  }
  watch_hangup();
}

void server_connection::dispatch(const protocol::frame_header& h, const char* payload,
                                 const handler_entry* entry) {
  request_view req{h.request_id, h.function_id, h.signature,
                   std::string_view(payload, h.body_length),
                   std::string_view(payload + h.body_length, h.attachment_length)};
  metrics_.begin(entry != nullptr ? entry->index : metrics::call_recorder::no_method, h.request_id,
                 h.payload_size(), read_time_);
  if ((h.flags & protocol::flag_trace) != 0) [[unlikely]] {
    if (!read_trace(h, req)) {
      metrics_.end_dispatch();
      return;
    }
  }
  if (h.timeout_ms != 0) {
    req.deadline = read_time_ + std::chrono::milliseconds(h.timeout_ms);
    // Requests queued behind slow work: the caller has given up, so don't run the handler.
    if (std::chrono::steady_clock::now() >= req.deadline) {
      reply_error(h.request_id, rpc_errc::timeout,
                  "deadline of " + std::to_string(h.timeout_ms) +
                      " ms passed before the handler could run");
      metrics_.end_dispatch();
      return;
    }
  }
  if (entry == nullptr) {
    char msg[64];
    std::snprintf(msg, sizeof msg, "no handler registered for function id 0x%08x",
                  static_cast<unsigned>(h.function_id));
    reply_error(h.request_id, rpc_errc::function_not_found, msg);
    metrics_.end_dispatch();
    return;
  }
  running_.reserve_one();  // a coroutine call's slot in the index, before it starts
  if (entry->limit != nullptr) [[unlikely]] {
    invoke_limited(*entry, req);
  } else {
    entry->invoke(entry->object, *this, req);
  }
  metrics_.end_dispatch();
}

bool server_connection::read_trace(const protocol::frame_header& h, request_view& req) {
  if (req.body.size() < protocol::trace_prefix_size) {
    reply_error(h.request_id, rpc_errc::bad_request,
                "the trace flag is set but the body is shorter than a trace context (" +
                    std::to_string(protocol::trace_prefix_size) + " bytes)");
    return false;
  }
  caller_trace_ = protocol::decode_trace_prefix(req.body.data());
  req.body.remove_prefix(protocol::trace_prefix_size);
  // An invalid context (an all-zero id) is dropped, as W3C asks: the call runs untraced.
  if (caller_trace_.valid()) req.trace = &caller_trace_;
  return true;
}

void server_connection::span_ended(request_context& ctx) noexcept {
  auto& traced = request_context_access::span(ctx);
  if (!traced || !core_.config.on_span) return;
  span s;
  s.context = traced->context;
  s.parent_span_id = traced->parent_span_id;
  const handler_entry* entry = core_.find(ctx.function_id());
  if (entry != nullptr) s.name = entry->name;
  s.start = traced->start;
  s.duration = std::chrono::steady_clock::now() - traced->steady_start;
  s.status = request_context_access::cancel_requested(ctx) ? rpc_errc::cancelled : traced->status;
  try {
    core_.config.on_span(s);
  } catch (...) {  // the exporter's failure is not the call's
  }
}

metrics::method_stats* server_connection::running_call_metrics(std::uint64_t request_id) {
  if (!metrics_.on()) return nullptr;
  request_context* ctx = running_.find(request_id);  // a coroutine call answering
  const handler_entry* entry = ctx == nullptr ? nullptr : core_.find(ctx->function_id());
  return entry == nullptr ? nullptr : &metrics_.shard()->at(entry->index);
}

void server_connection::on_control(const protocol::frame_header& h) {
  switch (h.type) {
    case protocol::msg_type::cancel:
      cancel_running(h.request_id);
      break;
    case protocol::msg_type::ping:
      // The pong states this server's reactor count (function id field): a client pool
      // opens up to one connection per reactor. Peers that predate it ignore the field.
      queue_control(protocol::msg_type::pong, h.request_id, core_.reactor_count());
      break;
    default:  // pong: hearing it was the point
      break;
  }
}

bool server_connection::on_stream_frame(const protocol::frame_header& h, const char* payload) {
  request_context* ctx = running_.find(h.request_id);
  stream_link* link = ctx == nullptr ? nullptr : request_context_access::stream(*ctx);
  if (link == nullptr) return true;  // its stream has ended: the client learns from its reply
  switch (h.type) {
    case protocol::msg_type::stream_item: {
      const std::size_t cost = protocol::stream_item_cost(h.body_length);
      if (verdict v = adm_.admit_item(cost); !v.admitted()) [[unlikely]] {
        if (v.what == verdict::kind::pause) {
          pause_for(v);
          return false;
        }
        reply_error(h.request_id, v.code, v.message);  // the item is dropped
        request_context_access::cancel(*ctx);
        return true;
      }
      link->on_item(std::string_view(payload, h.body_length));
      break;
    }
    case protocol::msg_type::stream_end:
      link->on_writes_closed();
      break;
    default:  // stream_credit: the grant travels in the header's last field
      link->on_credit(h.timeout_ms);
      break;
  }
  return true;
}

bool server_connection::admit_stream(std::uint64_t request_id) {
  if (verdict v = adm_.open_stream(); !v.admitted()) {
    reply_error(request_id, v.code, v.message);
    return false;
  }
  // Its idle check: the regular one may be armed for later than a quarter of the limit.
  if (core_.config.stream_idle_timeout.count() > 0 && timer_) {
    const time_point look = next_stream_look(std::chrono::steady_clock::now());
    if (look < timer_->expiry()) recheck_at(look);
  }
  return true;
}

outbound_queue* server_connection::begin_item(std::uint64_t request_id, std::size_t frame_bytes) {
  const std::size_t body = frame_bytes - protocol::header_size;
  if (body > core_.config.max_frame_size) {
    throw std::length_error("stream item of " + std::to_string(body) +
                            " bytes exceeds max_frame_size " +
                            std::to_string(core_.config.max_frame_size));
  }
  // Reserved like a reply. Refused, the stream waits for the queue to drain — unless nothing
  // is queued or being written, when no drain would come: an item always fits an empty queue.
  const bool idle = !writing_ && pending_.empty();
  if (!mem_.reserve_reply(frame_bytes, queued_reply_bytes())) {
    mem_.release_credit();
    if (!mem_.reserve_reply(frame_bytes, queued_reply_bytes()) && !idle) return nullptr;
  }
  reply_mark_ = pending_.mark();
  reply_id_ = request_id;
  reply_open_ = true;
  pending_.extend(protocol::header_size);
  return &pending_;
}

void server_connection::end_item(std::size_t owned_bytes) {
  protocol::frame_header h;
  h.type = protocol::msg_type::stream_item;
  h.request_id = reply_id_;
  h.body_length = static_cast<std::uint32_t>(pending_.mark() - reply_mark_ - protocol::header_size +
                                             owned_bytes);
  protocol::encode_header(h, pending_.at(reply_mark_));
  reply_open_ = false;
  frame_queued();
}

void server_connection::send_credit(std::uint64_t request_id, std::uint32_t bytes) {
  if (closed_) return;
  protocol::frame_header h;
  h.type = protocol::msg_type::stream_credit;
  h.request_id = request_id;
  h.timeout_ms = bytes;
  protocol::encode_header(h, pending_.extend(protocol::header_size));
  if (!dispatching_) flush();
}

void server_connection::wake_writable() {
  if (writable_waiters_.empty() || mem_.replies_full(queued_reply_bytes())) return;
  auto waiters = std::move(writable_waiters_);
  writable_waiters_.clear();
  for (stream_link* link : waiters) link->on_writable();
}

void server_connection::queue_control(protocol::msg_type type, std::uint64_t id,
                                      std::uint32_t info) {
  if (closed_) return;
  append_control_frame(pending_, type, id, info);
  if (!dispatching_) flush();
}

void server_connection::cancel_running(std::uint64_t request_id) {
  request_context* c = running_.find(request_id);  // O(1): a peer may send cancels by the million
  if (c != nullptr && !request_context_access::cancel_requested(*c)) {
    core_.stats.on_cancelled();
    request_context_access::cancel(*c);
  }
}

void server_connection::cancel_all_running() {
  // cancel() only emits a signal and resumes nothing inline, so the index stays as it is.
  running_.for_each([](request_context* c) { request_context_access::cancel(*c); });
}

void server_connection::on_rdma_setup(const protocol::frame_header& h, const char* payload) {
  // Over TLS too: the client's setup (and our answer) then travel authenticated and
  // encrypted; the bytes move to the queue pair all the same (switch_to_rdma).
  if (stream_.is_rdma() || rdma_next_ || served_request_) {
    fail(0, rpc_errc::protocol_error, "rdma_setup is only valid as a connection's first frame");
    return;
  }
  if (!core_.rdma) {
    fail(0, rpc_errc::protocol_error, "RDMA is not enabled on this server (rpc_server::init_ibv)");
    return;
  }
  std::string answer;
  std::error_code ec;
  const auto remote = stream_.socket().remote_endpoint(ec);
  const std::string peer = ec ? std::string("unknown") : peer_key(remote);
  auto stream = rdma::accept_setup(core_.rdma, reactor_, &core_.stats,
                                   std::string_view(payload, h.payload_size()), peer, answer);
  if (!stream) {
    pending_.append(rdma::setup_frame(stream.error().code(), stream.error().message()));
    stop_reading_ = true;  // closes once the refusal is written
    return;
  }
  pending_.append(rdma::setup_frame(rpc_errc::ok, answer));
  rdma_next_ = std::move(*stream);
}

void server_connection::switch_to_rdma() {
  stream_.switch_to_rdma(std::move(rdma_next_));  // a TLS session used for the setup is freed
  metrics_.connection().transport = metrics::transport_kind::rdma;
  mem_.release_tls();
  frames_.read_buffer().clear();
  read_more();
}

outbound_queue* server_connection::begin_reply(std::uint64_t request_id, std::size_t frame_bytes) {
  // Reserved before it is encoded: a peer asking for big replies and not reading them must
  // not make the server hold more than its limits. Credit set aside for calls may be what is
  // missing: a reply comes before new calls.
  if (frame_bytes - protocol::header_size > core_.config.max_frame_size ||
      !mem_.reserve_reply(frame_bytes, queued_reply_bytes())) [[unlikely]] {
    if (!retry_reply(request_id, frame_bytes)) return nullptr;
  }
  reply_mark_ = pending_.mark();
  reply_id_ = request_id;
  reply_open_ = true;
  protocol::frame_header h;
  h.type = protocol::msg_type::response;
  h.request_id = request_id;
  protocol::encode_header(h, pending_.extend(protocol::header_size));
  return &pending_;
}

bool server_connection::retry_reply(std::uint64_t request_id, std::size_t frame_bytes) {
  const std::size_t body = frame_bytes - protocol::header_size;
  if (body <= core_.config.max_frame_size) {
    mem_.release_credit();
    if (mem_.reserve_reply(frame_bytes, queued_reply_bytes())) return true;
  }
  if (body > core_.config.max_frame_size) {
    // Fail this call alone; a frame the peer must refuse would cost it the whole connection.
    reply_error(request_id, rpc_errc::message_too_large,
                "reply of " + std::to_string(body) + " bytes exceeds max_frame_size " +
                    std::to_string(core_.config.max_frame_size));
  } else if (!mem_.reply_could_fit(frame_bytes)) {
    reply_error(request_id, rpc_errc::message_too_large,
                "reply of " + std::to_string(frame_bytes) +
                    " bytes exceeds the server's memory limit (" +
                    std::to_string(core_.memory.server.limit()) + " bytes)");
  } else if (mem_.replies_full(queued_reply_bytes())) {
    reply_error(request_id, rpc_errc::server_busy,
                "reply not queued: " + std::to_string(queued_reply_bytes()) +
                    " reply bytes already wait for this client to read them");
  } else {
    reply_error(request_id, rpc_errc::server_busy,
                "reply of " + std::to_string(frame_bytes) +
                    " bytes not queued: the server is at its memory limit");
  }
  return false;
}

void server_connection::end_reply(request_context* ctx) {
  const std::size_t body = pending_.mark() - reply_mark_ - protocol::header_size;
  using access = request_context_access;
  const bool owned = ctx != nullptr && access::attachment_owned(*ctx);
  const std::size_t attachment = ctx == nullptr ? 0 : access::attachment_size(*ctx);
  protocol::frame_header h;
  h.type = protocol::msg_type::response;
  h.request_id = reply_id_;
  h.body_length = static_cast<std::uint32_t>(body);
  h.attachment_length = static_cast<std::uint32_t>(attachment);
  if (owned) {
    pending_.append_owned(access::take_owned_attachment(*ctx));
  } else if (ctx != nullptr) {
    pending_.append(access::attachment_view(*ctx));
  }
  protocol::encode_header(h, pending_.at(reply_mark_));
  metrics_.reply(call_metrics(reply_id_), protocol::header_size + body + attachment);
  reply_open_ = false;
  frame_queued();
}

void server_connection::reply_error(std::uint64_t request_id, rpc_errc code,
                                    std::string_view message) {
  metrics::call_recorder::error(call_metrics(request_id), code);
  if (request_context* c = running_.find(request_id); c != nullptr && c->trace() != nullptr)
    request_context_access::span(*c)->status = code;  // a traced call's span tells its end
  if (reply_open_) {  // an exception escaped half-way through encoding a reply
    pending_.rollback(reply_mark_);
    reply_open_ = false;
  }
  // Error frames are queued even past the reply limits (a call must end with its error), so
  // they are kept small; the dispatch loop's pause at those limits bounds how many queue up.
  message = message.substr(0, max_error_message);
  const std::size_t mark = pending_.mark();
  protocol::frame_header h;
  h.type = protocol::msg_type::response;
  h.status = code;
  h.request_id = request_id;
  pending_.extend(protocol::header_size);
  codec::encode(pending_, message);
  h.body_length = static_cast<std::uint32_t>(pending_.mark() - mark - protocol::header_size);
  protocol::encode_header(h, pending_.at(mark));  // after encoding: the buffer may have moved
  frame_queued();
}

void server_connection::frame_queued() {
  pending_.count_frame();
  if (closed_) {  // a coroutine handler finished after the connection went away
    pending_.clear();
    return;
  }
  if (!core_.config.coalesce_writes) {
    write_each();
    return;
  }
  // During dispatch the flush waits for the end of the batch: every reply to one recv
  // leaves in one write. Replies from coroutine handlers flush at once.
  if (!dispatching_) {
    flush();
    settle_replies();
  }
}

void server_connection::write_each() {
  // coalesce_writes off, the baseline it is measured against: one blocking write syscall
  // per reply, no batching at all.
  if (writing_ || closed_) return;
  std::error_code ec;
  std::uint64_t calls = 0;
  std::size_t n = 0;
  if (rdma_next_ || !stream_.write_blocking(pending_.buffers(), &calls, n, ec)) {
    flush();  // RDMA writes complete asynchronously: one frame per flush
    return;
  }
  core_.stats.on_write(pending_.frames(), calls, n);
  metrics_.sent(n);
  pending_.clear();
  if (ec) close();
}

void server_connection::call_started(request_context& ctx) noexcept {
  adm_.call_started();
  // The call keeps its request bytes and state.
  request_context_access::memory_charge(ctx) = mem_.take_admitted();
  request_context_access::arrived(ctx) = read_time_;  // it is being dispatched
  metrics_.call_started();
  running_.insert(&ctx);  // admit_request refused a duplicate id; dispatch reserved the slot
  request_context_access::limit(ctx) = std::exchange(call_limit_, nullptr);
  if (closed_ || peer_finished_) request_context_access::cancel(ctx);  // nobody reads its reply
  core_.handler_started();
}

void server_connection::call_finished(request_context& ctx) noexcept {
  if (ctx.trace() != nullptr) [[unlikely]]
    span_ended(ctx);
  const bool resume = adm_.call_finished(request_context_access::blocking(ctx));
  metrics_.call_finished(call_metrics(ctx.request_id()), request_context_access::arrived(ctx));
  running_.erase(&ctx);
  if (method_limit* l = request_context_access::limit(ctx)) l->release();
  mem_.call_done(std::exchange(request_context_access::memory_charge(ctx), 0));
  last_activity_ = std::chrono::steady_clock::now();
  core_.handler_finished();
  if (resume && !closed_) {
    // Not inline: a handler that finishes synchronously would dispatch from inside dispatch.
    asio::post(reactor_, [self = std::static_pointer_cast<server_connection>(shared_from_this())] {
      self->resume_dispatch();
    });
  }
  close_if_done();
}

void server_connection::flush(time_point now) {
  if (writing_ || closed_ || pending_.empty()) return;
  std::swap(pending_, frames_.sending());
  writing_waiters_.swap(written_waiters_);  // (the write before has told its own)
  writing_ = true;
  if (core_.config.write_timeout.count() > 0) {
    write_moved_ = now != time_point{} ? now : std::chrono::steady_clock::now();
    // Big replies are what a peer that stops reading leaves behind: known to the memory
    // waiters, they are reclaimed (the connection closed) if they stop moving.
    if (frames_.sending().size() >= 64 * 1024) hold_replies();
  }
  auto self = std::static_pointer_cast<server_connection>(shared_from_this());
  frames_.write(stream_, &write_moved_,
                [self](const std::error_code& ec, std::size_t n) { self->on_write(ec, n); });
}

std::size_t server_connection::stream_window() const noexcept {
  return std::clamp<std::size_t>(core_.config.stream_window, 1, UINT32_MAX);
}

std::size_t server_connection::max_stream_window() const noexcept {
  return std::clamp<std::size_t>(core_.config.max_stream_window, stream_window(), UINT32_MAX);
}

std::size_t server_connection::reserve_stream_growth(std::size_t bytes) noexcept {
  // The windows grow into at most a quarter of the connection's call memory: with the
  // defaults (512 streams of 256 KiB, 256 MiB) all windows together stay within it, so
  // windows that grew never make the connection wait for memory that only their own
  // handlers' reading would free.
  const std::size_t budget = core_.config.max_call_bytes_per_connection / 4;
  std::size_t used = stream_growth_.load(std::memory_order_relaxed);
  std::size_t take = 0;
  do {
    take = used >= budget ? 0 : std::min(bytes, budget - used);
    if (take == 0) return 0;
  } while (!stream_growth_.compare_exchange_weak(used, used + take, std::memory_order_relaxed));
  return take;
}

void server_connection::wait_written(stream_link* link) {
  if (closed_) {
    link->on_written();  // nothing queued now will be written
    return;
  }
  written_waiters_.push_back(link);
}

void server_connection::tell_written(std::vector<stream_link*>& links) noexcept {
  for (stream_link* link : links) link->on_written();
  links.clear();
}

void server_connection::on_write(const std::error_code& ec, std::size_t n) {
  writing_ = false;
  frames_.end_write(n, core_.stats);
  tell_written(writing_waiters_);  // its borrowed items are no longer referenced
  metrics_.sent(n);
  if (ec) {
    close();
    return;
  }
  if (rdma_next_ && !closed_) switch_to_rdma();  // the rdma_setup answer is out
  flush();
  settle_replies();
  wake_writable();
  if (adm_.paused_for(pause_reason::replies) && !mem_.replies_full(queued_reply_bytes())) {
    adm_.lift(pause_reason::replies);
    resume_dispatch();  // the frames left in the buffer first, then read on
    return;
  }
  close_if_done();
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
  if (write_stalled_for(stall_grace(), now)) {
    core_.stats.on_dead_peer();
    close();  // others wait for memory this peer's unread replies hold
    return;
  }
  // Moving, or not stalled long enough yet: look again when it would be, and stay known to
  // the next waiter.
  recheck_at(write_moved_ + stall_grace());
  hold_replies();
}

void server_connection::recheck_at(time_point t) {
  if (!timer_) return;
  timer_->expires_at(t);  // cancels the wait for the regular check; on_timer re-arms that
  timer_->async_wait([self = std::static_pointer_cast<server_connection>(shared_from_this())](
                         const std::error_code& ec) {
    if (!ec && !self->closed_) self->on_timer();
  });
}

void server_connection::fail(std::uint64_t request_id, rpc_errc code, std::string_view message) {
  reply_error(request_id, code, message);
  stop_reading_ = true;
  // Nothing more is read, so a stream could wait for the client's items forever and hold
  // the connection open: streams end here (plain calls still finish and are answered).
  running_.for_each([](request_context* c) {
    if (request_context_access::stream(*c) != nullptr) request_context_access::cancel(*c);
  });
}

void server_connection::begin_drain() {
  draining_ = true;
  adm_.stop_admitting();
  // Open streams still move (items, credit, the client's end): their frames are read on
  // until the last one has ended, and requests arriving meanwhile are refused. Without
  // streams, nothing more is read.
  if (adm_.open_streams() == 0) stop_reading_ = true;
  close_if_done();
}

void server_connection::close_if_done() {
  if (closed_) return;
  if (draining_ && adm_.open_streams() == 0) stop_reading_ = true;  // the last stream has ended
  if (!stop_reading_) return;
  // After the peer's FIN its calls are cancelled and their replies discarded: only what is
  // already queued is still written.
  if ((adm_.calls() == 0 || peer_finished_) && !writing_ && pending_.empty()) close();
}

void server_connection::force_close() { close(); }

void server_connection::close() {
  if (closed_) return;
  closed_ = true;
  if (holding_) core_.memory.remove_holder(this);
  if (holding_replies_) core_.memory.remove_holder(&holding_replies_);
  if (timer_) timer_->cancel();
  if (pre_auth_) end_pre_auth(false);  // its place is free the moment the peer is gone
  if (!stream_.is_rdma()) {
    // The buffer goes back to this reactor's pool: no read lands in it any more (a socket
    // read in flight completes as aborted once the socket closes below). An RDMA stream may
    // still copy into it until its own close completes, so that one stays until the end.
    const auto [data, capacity] = frames_.read_buffer().release_storage();
    if (capacity != 0) buffer_pool::for_this_thread().release({data, capacity});
    mem_.settle_read(0);
  }
  cancel_all_running();  // nobody will read their replies
  tell_written(
      written_waiters_);  // queued, never to be written (the write in flight tells its own)
  if (rdma_next_) rdma_next_->close();
  // An RDMA stream is counted closed once it has let its last SENDs complete (a draining
  // server's final replies), so stop() does not tear the reactors down under them.
  const bool later =
      stream_.close([self = std::static_pointer_cast<server_connection>(shared_from_this())] {
        self->core_.on_connection_closed(self.get());
      });
  if (!later) core_.on_connection_closed(this);
}

}  // namespace corvid::detail
