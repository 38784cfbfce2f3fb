// A server connection's life, read top to bottom: read → admit → dispatch → reply → write,
// and its end. The work is its owners' (read_gate, dispatcher, reply_writer,
// connection_watch, connection_setup); what is here is the loop that ties them together,
// the frames that are neither requests nor replies, and the calls' start and end.
#include "server_connection.hpp"

#include <algorithm>
#include <new>
#include <optional>
#include <string>

#include "corvid/detail/stream_link.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/trace/span.hpp"

#include "../protocol/compression.hpp"
#include "../runtime/asio_all.hpp"
#include "method_limit.hpp"
#include "server_core.hpp"
#include "transport_identity.hpp"

namespace corvid::detail {

server_connection::server_connection(server_core& core,
                                     asio::generic::stream_protocol::socket socket,
                                     std::string peer)
    : reply_writer(frames_),
      core_(core),
      reactor_(static_cast<asio::io_context&>(socket.get_executor().context())),
      stream_(std::move(socket)),
      peer_(std::move(peer)),
      adm_(core.memory, core.config, peer_),
      streams_(core.config),
      gate_(*this),
      dispatch_(*this),
      watch_(*this, core.config),
      setup_(*this) {
  if (core.metrics) metrics_.attach(&core.metrics->shard(core.reactor_index(reactor_)));
  std::error_code ec;
  if (stream_.socket().local_endpoint(ec).protocol().family() == AF_UNIX) {
    metrics_.connection().transport = metrics::transport_kind::unix_socket;
    identity_ = std::make_unique<peer_identity>();
    identity_->unix_peer = unix_peer_of(stream_.socket().native_handle());
  }
}

void server_connection::start() {
  watch_.start();
  auto tls = core_.tls();
  if (tls || core_.config.http_admin) {  // the first byte tells TLS and HTTP from corvid
    setup_.start(std::move(tls));
    return;
  }
  gate_.begin();
}

// ---- The loop ----

void server_connection::on_read(const std::error_code& ec, std::size_t n) {
  switch (gate_.read_done(ec, stream_.read_cancellable())) {
    case read_gate::read_end::bytes:
      break;
    case read_gate::read_end::again:  // the read was cancelled to shrink its buffer
      gate_.read_more();
      return;
    case read_gate::read_end::released:  // ... or to give it back: the connection went idle
      gate_.wait_readable();
      return;
    case read_gate::read_end::ignore:
      return;
    case read_gate::read_end::failed:
      close();
      return;
    case read_gate::read_end::peer_finished:
      // EOF: the peer sends nothing more. Its running calls are cancelled and their memory
      // returned (a client that half-closed may still read what is already queued).
      on_peer_finished();
      close_if_done();
      return;
    case read_gate::read_end::stopped:  // draining: requests that arrive now are not started
      close_if_done();
      return;
  }
  const auto now = std::chrono::steady_clock::now();  // deadlines count from arrival
  dispatch_.arrived(now);
  frames_.commit_read(n, core_.stats, now);
  metrics_.received(n);
  run_batch();
}

void server_connection::resume() {
  if (gate_.closed() || paused()) return;
  if (gate_.stopped()) {  // draining: frames still buffered are not started
    close_if_done();
    return;
  }
  run_batch();  // what waited in the buffer, then read on
}

void server_connection::run_batch() {
  const bool ok = process_frames();
  writer().flush(watch_.live.batch_end);
  writer().settle();
  if (ok) gate_.read_more();
  close_if_done();
}

bool server_connection::process_frames() {
  gate_.begin_batch(writer().pending_bytes());
  bool ok = true;
  if (gate_.skip_refused()) {
    request_role role{*this};
    ok = frames_.process(role);
  }
  gate_.end_batch();
  byte_buffer& buf = frames_.read_buffer();
  if (watch_.timed()) {
    connection_liveness& live = watch_.live;
    const auto now = std::chrono::steady_clock::now();  // after the handlers ran
    live.batch_end = now;
    if (gate_.batch_requests()) live.last_activity = now;
    const bool partial = !buf.empty() || gate_.skipping();  // a frame is still arriving
    if (partial && live.frame_started == connection_liveness::time_point{})
      live.frame_started = now;
    if (!partial) live.frame_started = {};
  }
  // The calls answered in this batch.
  metrics_.end_batch(watch_.timed() ? watch_.live.batch_end : connection_liveness::time_point{});
  core_.stats.on_frames_received(gate_.batch_frames());
  frames_.end_batch(core_.config.read_buffer_size, core_.memory.has_waiters());
  mem().end_batch();
  mem().settle_read(buf.capacity());
  if (buf.capacity() > core_.config.read_buffer_size) [[unlikely]]
    gate_.offer_grown_buffer();
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
  c.gate_.grow_for_frame(h);
}

frame_verdict server_connection::request_role::on_frame(const protocol::frame_header& h,
                                                        const char* payload) {
  frame_verdict v = frame_verdict::next;
  if (h.type == protocol::msg_type::request) [[likely]] {
    bool ok = true;
    try {
      if (!c.dispatch_.admit_request(h, payload, ok)) {
        return ok ? frame_verdict::hold : frame_verdict::fail;
      }
    } catch (...) {
      // Out of memory in our own bookkeeping (handlers' and decoders' exceptions are
      // answered where they happen): this connection cannot keep its replies consistent.
      c.mem().return_admitted();
      c.close();
      return frame_verdict::fail;
    }
    c.gate_.count_frame(true);
  } else if (h.type >= protocol::msg_type::stream_item) {
    if (!c.on_stream_frame(h, payload)) return frame_verdict::hold;
    c.gate_.count_frame(true);
  } else if (h.type == protocol::msg_type::rdma_setup) {
    c.setup_.on_rdma_setup(h, payload);
    v = frame_verdict::last;  // the client sends nothing more on this socket
  } else {
    c.on_control(h);
  }
  c.watch_.live.frame_started = {};  // whatever follows started arriving with this batch
  // (Only with another frame behind this one: an empty continuation would look like a batch
  // that held no big frame and shrink the buffer.)
  if (c.gate_.turn_spent(c.writer().pending_bytes()) && v == frame_verdict::next &&
      c.frames_.read_buffer().size() >= h.frame_size() + protocol::header_size) [[unlikely]] {
    c.gate_.yield();
    v = frame_verdict::last;
  }
  return v;
}

void server_connection::pause_for(const verdict& v) {
  if (v.reason == pause_reason::memory) {
    gate_.wait_for_memory(false, v.need);
    return;
  }
  core_.stats.on_admission_pause();
  adm_.pause(v.reason);  // replies: on_written resumes; calls, workers: call_finished does
  if (v.reason == pause_reason::replies) writer().hold();
  watch_.watch_hangup();
}

void server_connection::on_written() {
  if (setup_.switching() && !gate_.closed()) setup_.switch_to_rdma();  // its answer is out
  writer().flush();
  writer().settle();
  wake_writable();
  if (adm_.paused_for(pause_reason::replies) && !mem().replies_full(writer().queued_bytes())) {
    adm_.lift(pause_reason::replies);
    resume();  // the frames left in the buffer first, then read on
    return;
  }
  close_if_done();
}

// ---- Frames other than requests ----

bool server_connection::on_stream_frame(const protocol::frame_header& h, const char* payload) {
  request_context* ctx = running_.find(h.request_id);
  stream_link* link = ctx == nullptr ? nullptr : request_context_access::stream(*ctx);
  if (link == nullptr) return true;  // its stream has ended: the client learns from its reply
  if ((h.flags & protocol::must_understand_flags) != 0) [[unlikely]] {
    if (protocol::unknown_must_understand(h) == 0)
      return on_compressed_item(h, payload, *ctx, *link);
    // A bit this build does not know: what the frame means is unknown, so the stream cannot
    // go on (other calls can: the frame's lengths are good).
    reply_error(h.request_id, rpc_errc::bad_request, protocol::describe_unknown_must_understand(h));
    request_context_access::cancel(*ctx);
    return true;
  }
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
    default:  // stream_credit
      link->on_credit(h.credit);
      break;
  }
  return true;
}

bool server_connection::on_compressed_item(const protocol::frame_header& h, const char* payload,
                                           request_context& ctx, stream_link& link) {
  // The only known bit of a stream item is flag_compressed.
  const std::string_view packed(payload, h.body_length);
  const std::optional<protocol::inflated_sizes> sizes = protocol::read_inflated_sizes(packed);
  std::string why;
  rpc_errc code = rpc_errc::bad_request;
  if (h.attachment_length != 0 || !sizes || sizes->attachment != 0) {
    why = "a compressed stream item with an attachment, or shorter than its 8-byte head";
  } else if (sizes->body > core_.config.max_frame_size) {
    code = rpc_errc::message_too_large;
    why = "a compressed stream item declares " + std::to_string(sizes->body) +
          " bytes inflated, over max_frame_size " + std::to_string(core_.config.max_frame_size);
  }
  if (why.empty()) {
    // Charged at what it inflates to, before that is allocated: the item the stream keeps,
    // and the room it is inflated into while it is handed over.
    if (verdict v = adm_.admit_item(protocol::stream_item_cost(sizes->body)); !v.admitted()) {
      if (v.what == verdict::kind::pause) {
        pause_for(v);
        return false;
      }
      code = v.code;
      why = v.message;
    } else if (!mem().hold(sizes->body)) {
      adm_.release(protocol::stream_item_cost(sizes->body));
      code = rpc_errc::server_busy;
      why = "no memory to inflate a compressed stream item of " + std::to_string(sizes->body) +
            " bytes";
    } else {
      std::string item;
      try {
        why = protocol::inflate(packed, item);
      } catch (const std::bad_alloc&) {
        why = "out of memory inflating a compressed stream item";
      }
      if (why.empty()) link.on_item(item);
      mem().call_done(sizes->body);
      if (!why.empty()) adm_.release(protocol::stream_item_cost(sizes->body));
    }
  }
  if (!why.empty()) {
    reply_error(h.request_id, code, why);
    request_context_access::cancel(ctx);
  }
  return true;
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
      writer().queue_control(protocol::make_pong(h.request_id, core_.reactor_count()));
      break;
    default:  // pong: hearing it was the point
      break;
  }
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

void server_connection::on_peer_finished() {
  gate_.peer_finished();
  cancel_all_running();
}

// ---- Calls: their start and end (call_budget), spans and metrics ----

void server_connection::call_started(request_context& ctx) noexcept {
  adm_.call_started();
  // The call keeps its request bytes and state.
  request_context_access::memory_charge(ctx) = mem().take_admitted();
  request_context_access::arrived(ctx) = dispatch_.arrival();  // it is being dispatched
  metrics_.call_started();
  running_.insert(&ctx);  // admit_request refused a duplicate id; dispatch reserved the slot
  dispatch_.call_started(ctx);
  if (gate_.peer_gone()) request_context_access::cancel(ctx);  // nobody reads its reply
  core_.handler_started();
}

void server_connection::call_finished(request_context& ctx) noexcept {
  if (ctx.trace() != nullptr) [[unlikely]]
    span_ended(ctx);
  // A call that ends without a reply (cancelled, or its connection closed): its observers
  // hear of it now. One that replied was told then.
  if (writer().observes_ends()) [[unlikely]]
    dispatch_.checks().ended(ctx.request_id(), rpc_errc::cancelled);
  const bool resume_now = adm_.call_finished(request_context_access::blocking(ctx),
                                             request_context_access::memory_charge(ctx));
  metrics_.call_finished(call_metrics(ctx.request_id()), request_context_access::arrived(ctx));
  running_.erase(&ctx);
  if (method_limit* l = request_context_access::limit(ctx)) l->release();
  mem().call_done(std::exchange(request_context_access::memory_charge(ctx), 0));
  watch_.live.last_activity = std::chrono::steady_clock::now();
  core_.handler_finished();
  if (resume_now && !gate_.closed()) {
    // Not inline: a handler that finishes synchronously would dispatch from inside dispatch.
    asio::post(reactor_, [self = self()] { self->resume(); });
  }
  close_if_done();
}

bool server_connection::submit_blocking(blocking_job& job, std::uint64_t request_id) {
  if (!core_.submit_blocking(job, dispatch_.lane(), *this, request_id, adm_.blocking_light())) {
    return false;
  }
  // Its place in this connection's share of the queue, until the call ends (call_finished).
  request_context* ctx = running_.find(request_id);
  if (ctx != nullptr) {
    request_context_access::blocking(*ctx) = true;
    adm_.blocking_queued(request_context_access::memory_charge(*ctx));
  }
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

// ---- Streams (stream_port) ----

bool server_connection::admit_stream(std::uint64_t request_id) {
  if (verdict v = adm_.open_stream(); !v.admitted()) {
    reply_error(request_id, v.code, v.message);
    return false;
  }
  watch_.stream_opened();
  return true;
}

void server_connection::send_credit(std::uint64_t request_id, std::uint32_t bytes) {
  writer().queue_control(protocol::make_credit(request_id, bytes));
}

void server_connection::wake_writable() {
  if (streams_.writable_waiting() && !mem().replies_full(writer().queued_bytes())) {
    streams_.wake_writable();
  }
}

void server_connection::wait_written(stream_link* link) {
  if (gate_.closed()) {
    link->on_written();  // nothing queued now will be written
    return;
  }
  streams_.wait_written(link);
}

// ---- The end ----

void server_connection::refuse(std::string reason) { refuse_with(rpc_errc::server_busy, reason); }

void server_connection::refuse_with(rpc_errc code, std::string_view reason) {
  fail(0, code, reason);
  writer().flush();
}

void server_connection::fail(std::uint64_t request_id, rpc_errc code, std::string_view message) {
  reply_error(request_id, code, message);
  gate_.stop();
  // Nothing more is read, so a stream could wait for the client's items forever and hold
  // the connection open: streams end here (plain calls still finish and are answered).
  running_.for_each([](request_context* c) {
    if (request_context_access::stream(*c) != nullptr) request_context_access::cancel(*c);
  });
}

void server_connection::begin_drain() {
  gate_.drain();
  adm_.stop_admitting();
  // Open streams still move (items, credit, the client's end): their frames are read on
  // until the last one has ended, and requests arriving meanwhile are refused. Without
  // streams, nothing more is read.
  if (adm_.open_streams() == 0) gate_.stop();
  close_if_done();
}

void server_connection::close_if_done() {
  if (gate_.closed()) return;
  if (gate_.draining() && adm_.open_streams() == 0) gate_.stop();  // the last stream has ended
  if (!gate_.stopped()) return;
  // After the peer's FIN its calls are cancelled and their replies discarded: only what is
  // already queued is still written.
  if ((adm_.calls() == 0 || gate_.peer_gone()) && writer().idle()) close();
}

void server_connection::force_close() { close(); }

void server_connection::close() {
  if (!gate_.close()) return;
  writer().closed();
  watch_.closed();
  setup_.closed();
  gate_.closed_socket();
  cancel_all_running();  // nobody will read their replies
  streams_.closed();
  // An RDMA stream is counted closed once it has let its last SENDs complete (a draining
  // server's final replies), so stop() does not tear the reactors down under them.
  const bool later =
      stream_.close([self = self()] { self->core_.on_connection_closed(self.get()); });
  if (!later) core_.on_connection_closed(this);
}

}  // namespace corvid::detail
