// A server connection's reply sink and call budget (reply_sink.hpp, call_budget.hpp):
// replies and error replies reserved and queued, calls started and finished, cancels, and
// the spans of traced calls. docs/architecture.md, "Admission" and "Tracing".
#include <string>

#include "corvid/codec/codec.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/trace/span.hpp"

#include "../protocol/trace_prefix.hpp"
#include "../runtime/asio_all.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {
namespace {
// Error messages (a handler's what() included) are cut to this: an error frame is charged
// by force, so its size must be bounded.
constexpr std::size_t max_error_message = 4096;
}  // namespace

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

bool server_connection::read_flags(const protocol::frame_header& h, request_view& req) {
  // A bit this build does not know may change what the body holds (as the trace flag does):
  // refused whole, before a byte of it is read as arguments.
  if (protocol::unknown_must_understand(h) != 0) {
    reply_error(h.request_id, rpc_errc::bad_request, protocol::describe_unknown_must_understand(h));
    return false;
  }
  if ((h.flags & protocol::flag_trace) == 0) return true;
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
  // The header is rewritten with the lengths by end_reply.
  protocol::encode_header(protocol::make_response(request_id),
                          pending_.extend(protocol::header_size));
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
  const protocol::frame_header h = protocol::make_response(
      reply_id_, static_cast<std::uint32_t>(body), static_cast<std::uint32_t>(attachment));
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
  pending_.extend(protocol::header_size);
  codec::encode(pending_, message);
  const auto body = static_cast<std::uint32_t>(pending_.mark() - mark - protocol::header_size);
  // After encoding: the buffer may have moved.
  protocol::encode_header(protocol::make_error(request_id, code, body), pending_.at(mark));
  frame_queued();
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
  const bool resume = adm_.call_finished(request_context_access::blocking(ctx),
                                         request_context_access::memory_charge(ctx));
  metrics_.call_finished(call_metrics(ctx.request_id()), request_context_access::arrived(ctx));
  running_.erase(&ctx);
  if (method_limit* l = request_context_access::limit(ctx)) l->release();
  mem_.call_done(std::exchange(request_context_access::memory_charge(ctx), 0));
  live_.last_activity = std::chrono::steady_clock::now();
  core_.handler_finished();
  if (resume && !closed_) {
    // Not inline: a handler that finishes synchronously would dispatch from inside dispatch.
    asio::post(reactor_, [self = std::static_pointer_cast<server_connection>(shared_from_this())] {
      self->resume_dispatch();
    });
  }
  close_if_done();
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

}  // namespace corvid::detail
