// A server connection's life, read top to bottom: read → admit → dispatch → reply → write,
// and its end. What it delegates: admission (connection_admission: every byte and place its
// peer holds), liveness (connection_liveness, connection_waits.cpp: timers, pauses, memory
// given back), its first moments (connection_setup.cpp: pre-authentication, TLS, RDMA), the
// reply sink and call budget (connection_replies.cpp) and the stream port
// (connection_streams.cpp, stream_mux).
#include "server_connection.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <stdexcept>

#include "corvid/codec/codec.hpp"
#include "corvid/detail/stream_link.hpp"
#include "corvid/memory/buffer_pool.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/trace/span.hpp"

#include "../runtime/asio_all.hpp"
#include "server_core.hpp"

namespace corvid::detail {
namespace {
// Reply bytes one batch may queue before it yields its reactor: the frames left in the
// buffer go on in a post, after the events of the reactor's other connections. Without it,
// a peer whose requests piled up while the reactor was busy (big replies, slow handlers)
// takes the reactor for the whole pile, and every other connection on it waits that long.
constexpr std::size_t turn_budget = 256 * 1024;
}  // namespace

server_connection::server_connection(server_core& core,
                                     asio::generic::stream_protocol::socket socket,
                                     std::string peer)
    : core_(core),
      reactor_(static_cast<asio::io_context&>(socket.get_executor().context())),
      stream_(std::move(socket)),
      peer_(std::move(peer)),
      adm_(core.memory, core.config, peer_),
      mem_(adm_.memory()),
      live_(core.config),
      streams_(core.config) {
  if (core.metrics) metrics_.attach(&core.metrics->shard(core.reactor_index(reactor_)));
  std::error_code ec;
  if (stream_.socket().local_endpoint(ec).protocol().family() == AF_UNIX) {
    metrics_.connection().transport = metrics::transport_kind::unix_socket;
  }
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
  flush(live_.batch_end);
  settle_replies();
  if (ok) read_more();
  close_if_done();
}

void server_connection::on_peer_finished() {
  peer_finished_ = true;
  cancel_all_running();
}

void server_connection::resume_dispatch() {
  if (closed_ || paused()) return;
  if (stop_reading_) {  // draining: frames still buffered are not started
    close_if_done();
    return;
  }
  const bool ok = process_frames();  // what waited in the buffer, then read on
  flush(live_.batch_end);
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
    live_.batch_end = now;
    if (batch_requests_) live_.last_activity = now;
    const bool partial = !buf.empty() || skip_ != 0;  // a frame is still arriving
    if (partial && live_.frame_started == time_point{}) live_.frame_started = now;
    if (!partial) live_.frame_started = {};
  }
  metrics_.end_batch(timer_ ? live_.batch_end : time_point{});  // the calls answered in this batch
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
  c.live_.frame_started = {};  // whatever follows started arriving with this batch
  // (Only with another frame behind this one: an empty continuation would look like a batch
  // that held no big frame and shrink the buffer.)
  if (c.pending_.size() > c.batch_start_bytes_ + turn_budget && v == frame_verdict::next &&
      c.frames_.read_buffer().size() >= h.frame_size() + protocol::header_size) [[unlikely]] {
    c.yielded_ = true;
    v = frame_verdict::last;
  }
  return v;
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
  adm_.pause(v.reason);  // replies: on_write resumes; calls, workers: call_finished does
  if (v.reason == pause_reason::replies) hold_replies();
  watch_hangup();
}

void server_connection::dispatch(const protocol::frame_header& h, const char* payload,
                                 const handler_entry* entry) {
  request_view req{h.request_id, h.function_id, h.signature,
                   std::string_view(payload, h.body_length),
                   std::string_view(payload + h.body_length, h.attachment_length)};
  metrics_.begin(entry != nullptr ? entry->index : metrics::call_recorder::no_method, h.request_id,
                 h.payload_size(), read_time_);
  if ((h.flags & protocol::must_understand_flags) != 0) [[unlikely]] {
    if (!read_flags(h, req)) {
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
    invoke(*entry, req);
  }
  metrics_.end_dispatch();
}

void server_connection::invoke(const handler_entry& entry, const request_view& req) {
  entry.invoke(entry.object, *this, *this, *this, req);
}

void server_connection::on_control(const protocol::frame_header& h) {
  // A cancel or ping with a must-understand bit this build does not know is not acted on: it
  // gets no reply, and the connection goes on.
  if (protocol::unknown_must_understand(h) != 0) [[unlikely]]
    return;
  switch (h.type) {
    case protocol::msg_type::cancel:
      cancel_running(h.request_id);
      break;
    case protocol::msg_type::ping:
      // The pong states this server's reactor count: a client pool
      // opens up to one connection per reactor. Peers that predate it ignore the field.
      queue_control(protocol::make_pong(h.request_id, core_.reactor_count()));
      break;
    default:  // pong: hearing it was the point
      break;
  }
}

void server_connection::queue_control(const protocol::frame_header& h) {
  if (closed_) return;
  append_header_frame(pending_, h);
  if (!dispatching_) flush();
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

void server_connection::flush(time_point now) {
  if (writing_ || closed_ || pending_.empty()) return;
  std::swap(pending_, frames_.sending());
  streams_.write_started();
  writing_ = true;
  if (core_.config.write_timeout.count() > 0) {
    live_.write_moved = now != time_point{} ? now : std::chrono::steady_clock::now();
    // Big replies are what a peer that stops reading leaves behind: known to the memory
    // waiters, they are reclaimed (the connection closed) if they stop moving.
    if (frames_.sending().size() >= 64 * 1024) hold_replies();
  }
  auto self = std::static_pointer_cast<server_connection>(shared_from_this());
  frames_.write(stream_, &live_.write_moved,
                [self](const std::error_code& ec, std::size_t n) { self->on_write(ec, n); });
}

void server_connection::on_write(const std::error_code& ec, std::size_t n) {
  writing_ = false;
  frames_.end_write(n, core_.stats);
  streams_.write_done();  // their borrowed items are no longer referenced
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
  streams_.closed();
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
