// A server connection's requests, from admission's verdict to the handler's invoker.
// docs/architecture.md, "Dispatch" and "Blocking handlers and method limits".
#include "dispatcher.hpp"

#include <cstdio>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "corvid/server/request_context.hpp"

#include "../protocol/compression.hpp"
#include "../protocol/metadata_block.hpp"
#include "../protocol/trace_prefix.hpp"
#include "method_limit.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {

dispatcher::dispatcher(server_connection& c) noexcept
    : c_(c), checks_(c), intercepted_(!c.core_.interceptors.empty()) {}

bool dispatcher::admit_request(const protocol::frame_header& h, const char* payload, bool& ok) {
  server_connection& c = c_;  // held in a register across the calls below, not reloaded
  const handler_entry* entry = c.core_.find(h.function_id);
  const bool blocking = entry != nullptr && entry->blocking;
  const bool duplicate = c.running_.find(h.request_id) != nullptr;
  const std::size_t queued = c.writer().queued_bytes();
  if (c.adm_.admits_request(h, duplicate, blocking, queued)) [[likely]] {
    served_ = true;
    const bool done = dispatch(h, payload, entry);
    c.mem().return_admitted();  // unless a coroutine call took the bytes
    return done;
  }
  return act_on(c.adm_.decide_request(h, duplicate, blocking, queued), h, payload, entry, ok);
}

bool dispatcher::act_on(verdict v, const protocol::frame_header& h, const char* payload,
                        const handler_entry* entry, bool& ok) {
  switch (v.what) {
    case verdict::kind::admit: {
      served_ = true;
      const bool done = dispatch(h, payload, entry);
      c_.mem().return_admitted();
      return done;
    }
    case verdict::kind::refuse:
      c_.writer().reply_error(h.request_id, v.code, v.message);
      return true;
    case verdict::kind::fail:
      c_.fail(0, v.code, v.message);
      ok = false;
      return false;
    case verdict::kind::pause:
      break;
  }
  c_.pause_for(v);
  return false;
}

[[gnu::always_inline]] inline bool dispatcher::run(const protocol::frame_header& h,
                                                   request_view& req, const handler_entry* entry) {
  server_connection& c = c_;
  metrics::call_recorder& metrics = c.metrics_;
  // 2. The caller's deadline: requests queued behind slow work, whose caller has given up,
  // do not run.
  if (h.timeout_ms != 0) {
    req.deadline = arrived_ + std::chrono::milliseconds(h.timeout_ms);
    if (std::chrono::steady_clock::now() >= req.deadline) {
      c_.writer().reply_error(h.request_id, rpc_errc::timeout,
                              "deadline of " + std::to_string(h.timeout_ms) +
                                  " ms passed before the handler could run");
      metrics.end_dispatch();
      return true;
    }
  }
  // 3. The method.
  if (entry == nullptr) {
    char msg[64];
    std::snprintf(msg, sizeof msg, "no handler registered for function id 0x%08x",
                  static_cast<unsigned>(h.function_id));
    c_.writer().reply_error(h.request_id, rpc_errc::function_not_found, msg);
    metrics.end_dispatch();
    return true;
  }
  // 4. The interceptors (server/interceptor.hpp): they may refuse it, before its arguments
  // are decoded. A server without any pays this one test.
  if (intercepted_) [[unlikely]] {
    switch (checks_.run(h, req, *entry)) {
      case call_check::result::proceed:
        checks_.observe(h, *entry);
        break;
      case call_check::result::answered:
        metrics.end_dispatch();
        return true;
      case call_check::result::wait:
        metrics.withdraw();  // dispatched again, and counted then, once the decision is in
        return false;
    }
  }
  // 5. Its concurrency limit, then the handler.
  c.running_.reserve_one();  // a coroutine call's slot in the index, before it starts
  if (entry->limit != nullptr) [[unlikely]] {
    invoke_limited(*entry, req);
  } else {
    invoke(*entry, req);
  }
  metrics.end_dispatch();
  return true;
}

bool dispatcher::dispatch(const protocol::frame_header& h, const char* payload,
                          const handler_entry* entry) {
  request_view req{h.request_id, h.function_id, h.signature,
                   std::string_view(payload, h.body_length),
                   std::string_view(payload + h.body_length, h.attachment_length)};
  c_.metrics_.begin(entry != nullptr ? entry->index : metrics::call_recorder::no_method,
                    h.request_id, h.payload_size(), arrived_);
  // 1. What the frame's flags say about its body (compressed, a trace context or metadata
  // before the arguments), and about its caller (it accepts compressed replies). One test for
  // the requests that set none.
  if ((h.flags & (protocol::must_understand_flags | protocol::flag_accepts_compressed)) != 0)
      [[unlikely]]
    return dispatch_flagged(h, req, entry);
  return run(h, req, entry);
}

bool dispatcher::dispatch_flagged(const protocol::frame_header& h, request_view& req,
                                  const handler_entry* entry) {
  bool done = true;
  inflated_payload room;  // lives until the call has copied what it keeps
  if (read_flags(h, req, room)) {
    // Only a request the server accepts speaks for its client (a refused one may be garbage).
    if ((h.flags & protocol::flag_accepts_compressed) != 0) c_.writer().peer_accepts_compressed();
    done = run(h, req, entry);
  } else {
    c_.metrics_.end_dispatch();
  }
  // The call copied what it keeps (a coroutine's request copy is charged on its own); the
  // room is freed on return, with its charge.
  c_.mem().call_done(room.charge);
  return done;
}

void dispatcher::invoke(const handler_entry& entry, const request_view& req) {
  entry.invoke(entry.object, c_, c_, c_, req);
}

void dispatcher::invoke_limited(const handler_entry& entry, const request_view& req) {
  if (!entry.limit->try_acquire()) {
    c_.writer().reply_error(req.request_id, rpc_errc::server_busy, entry.limit->refusal());
    return;
  }
  limit_ = entry.limit.get();
  try {
    invoke(entry, req);
  } catch (...) {
    if (limit_ != nullptr) std::exchange(limit_, nullptr)->release();
    throw;
  }
  // A call that started (call_started) took the place with it; otherwise it ended here.
  if (limit_ != nullptr) std::exchange(limit_, nullptr)->release();
}

void dispatcher::call_started(request_context& ctx) noexcept {
  request_context_access::limit(ctx) = std::exchange(limit_, nullptr);
}

bool dispatcher::read_flags(const protocol::frame_header& h, request_view& req,
                            inflated_payload& room) {
  // A bit this build does not know may change what the body holds (as the trace flag does):
  // refused whole, before a byte of it is read as arguments.
  if (protocol::unknown_must_understand(h) != 0) {
    c_.writer().reply_error(h.request_id, rpc_errc::bad_request,
                            protocol::describe_unknown_must_understand(h));
    return false;
  }
  if ((h.flags & protocol::flag_compressed) != 0) {
    if (!inflate(h, req, room)) return false;
  }
  if ((h.flags & protocol::flag_trace) != 0) {
    if (req.body.size() < protocol::trace_prefix_size) {
      c_.writer().reply_error(
          h.request_id, rpc_errc::bad_request,
          "the trace flag is set but the body is shorter than a trace context (" +
              std::to_string(protocol::trace_prefix_size) + " bytes)");
      return false;
    }
    caller_trace_ = protocol::decode_trace_prefix(req.body.data());
    req.body.remove_prefix(protocol::trace_prefix_size);
    // An invalid context (an all-zero id) is dropped, as W3C asks: the call runs untraced.
    if (caller_trace_.valid()) req.trace = &caller_trace_;
  }
  if ((h.flags & protocol::flag_metadata) != 0) {
    // Checked whole against the limits before a view of any entry is taken. Its bytes came
    // with the frame, charged by admission like the arguments; nothing is allocated here.
    const server_config& cfg = c_.core_.config;
    protocol::metadata_read md = protocol::read_metadata(
        req.body, {.max_entries = cfg.max_metadata_entries, .max_bytes = cfg.max_metadata_bytes});
    if (md.code != rpc_errc::ok) {
      c_.writer().reply_error(h.request_id, md.code, md.message);
      return false;
    }
    metadata_ = metadata_view(
        req.body.substr(protocol::metadata_head_size, md.consumed - protocol::metadata_head_size),
        md.entries.size());
    req.metadata = &metadata_;
    req.body.remove_prefix(md.consumed);
  }
  return true;
}

bool dispatcher::inflate(const protocol::frame_header& h, request_view& req,
                         inflated_payload& room) {
  const std::uint32_t max_frame = c_.core_.config.max_frame_size;
  if (h.attachment_length != 0) {
    c_.writer().reply_error(h.request_id, rpc_errc::bad_request,
                            "a compressed request carries its attachment inside its body "
                            "(attachment length must be 0)");
    return false;
  }
  const std::optional<protocol::inflated_sizes> sizes = protocol::read_inflated_sizes(req.body);
  if (!sizes) {
    c_.writer().reply_error(h.request_id, rpc_errc::bad_request,
                            "a compressed request shorter than its 8-byte head");
    return false;
  }
  // The declared size, checked and charged before a byte is allocated: a small frame that
  // claims to inflate past the limits is refused from its head alone.
  if (sizes->total() > max_frame) {
    c_.writer().reply_error(h.request_id, rpc_errc::message_too_large,
                            "a compressed request declares " + std::to_string(sizes->total()) +
                                " bytes inflated, over max_frame_size " +
                                std::to_string(max_frame));
    return false;
  }
  if (!c_.mem().hold(sizes->total())) {
    c_.writer().reply_error(h.request_id, rpc_errc::server_busy,
                            "no memory to inflate a compressed request of " +
                                std::to_string(sizes->total()) + " bytes");
    return false;
  }
  room.charge = sizes->total();
  std::string why;
  try {
    why = protocol::inflate(req.body, room.bytes);
  } catch (const std::bad_alloc&) {
    why = "out of memory inflating a compressed request";
  }
  if (!why.empty()) {
    c_.writer().reply_error(h.request_id, rpc_errc::bad_request, why);
    return false;
  }
  req.body = std::string_view(room.bytes).substr(0, sizes->body);
  req.attachment = std::string_view(room.bytes).substr(sizes->body, sizes->attachment);
  return true;
}

}  // namespace corvid::detail
