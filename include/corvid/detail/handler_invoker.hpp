#pragma once
// Turns a registered function into a type-erased request handler: decode the arguments the
// function's signature names, call it (plain, member or coroutine), encode what it returns.
#include <algorithm>
#include <chrono>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "corvid/codec/codec.hpp"
#include "corvid/codec/decode_budget.hpp"
#include "corvid/detail/byte_buffer.hpp"
#include "corvid/detail/call_budget.hpp"
#include "corvid/detail/detached.hpp"
#include "corvid/detail/function_traits.hpp"
#include "corvid/detail/reply_sink.hpp"
#include "corvid/detail/stream_port.hpp"
#include "corvid/detail/switch_to.hpp"
#include "corvid/export.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/protocol/function_id.hpp"
#include "corvid/protocol/signature.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/trace/trace_scope.hpp"

namespace corvid::detail {

// One request as it sits in the connection's read buffer.
struct request_view {
  std::uint64_t request_id;
  std::uint32_t function_id;
  std::uint16_t signature;  // the caller's fingerprint of the function; 0 = not stated
  std::string_view body;
  std::string_view attachment;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const trace_context* trace = nullptr;  // the caller's, when the request carried one
  // Its call metadata block, checked (docs/protocol.md, "Call metadata"), when it carried
  // one: a pointer, so a request without one costs a single store.
  const metadata_view* metadata = nullptr;

  std::size_t metadata_bytes() const noexcept {
    return metadata == nullptr ? 0 : metadata->wire().size();
  }
  // What a call that outlives its read buffer copies: metadata, body and attachment.
  std::size_t held_bytes() const noexcept {
    return metadata_bytes() + body.size() + attachment.size();
  }
};

// A registered function's entry point, called by the connection that read the request: it
// answers through `sink`, asks `budget` before holding memory or running past dispatch, and
// (stream handlers only) moves the stream's items through `port`. Three views of one
// connection, so each template depends on what it uses.
using invoke_fn = void (*)(void* object, reply_sink& sink, call_budget& budget, stream_port& port,
                           const request_view& request);

// what() of an exception, or a fixed text for non-std exceptions.
CORVID_API std::string describe_exception(std::exception_ptr e);

template <auto F>
decltype(auto) apply_handler(void* object, request_context& ctx, decoded_args_t<F>& args) {
  using traits = function_traits<decltype(F)>;
  using params = wire_params_t<F>;
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    // Each decoded value is passed as the parameter's own type: moved into by-value
    // parameters, bound to reference parameters.
    auto arg = [&]<std::size_t J>() -> decltype(auto) {
      return static_cast<std::tuple_element_t<J, params>&&>(std::get<J>(args));
    };
    if constexpr (std::is_void_v<typename traits::class_type>) {
      if constexpr (traits::wants_context) {
        return F(ctx, arg.template operator()<I>()...);
      } else {
        return F(arg.template operator()<I>()...);
      }
    } else {
      auto* self = static_cast<typename traits::class_type*>(object);
      if constexpr (traits::wants_context) {
        return (self->*F)(ctx, arg.template operator()<I>()...);
      } else {
        return (self->*F)(arg.template operator()<I>()...);
      }
    }
  }(std::make_index_sequence<std::tuple_size_v<params>>{});
}

// Appends the wire block of `md` (a reply's metadata).
CORVID_API void append_metadata(outbound_queue& out, const corvid::metadata& md);

// Queues a success reply carrying `value` (or nothing for void handlers). Its size is known
// before anything is encoded, so the sink reserves the memory first; refused, it answers
// the request with an error instead.
template <class... V>
[[gnu::cold, gnu::noinline]] void send_value_with_metadata(reply_sink& sink, std::uint64_t id,
                                                           request_context& ctx,
                                                           const corvid::metadata& md,
                                                           const V&... value) {
  const std::size_t frame = protocol::header_size + md.wire_size() +
                            (std::size_t{0} + ... + codec::encoded_size(value)) +
                            request_context_access::attachment_size(ctx);
  outbound_queue* out = sink.begin_reply(id, frame);
  if (out == nullptr) return;
  append_metadata(*out, md);  // first in the body (docs/protocol.md, "Call metadata")
  (codec::encode(*out, value), ...);
  sink.end_reply(&ctx, protocol::flag_metadata);
}

template <class... V>
void send_value(reply_sink& sink, std::uint64_t id, request_context& ctx, const V&... value) {
  if (const corvid::metadata* md = request_context_access::response_metadata(ctx)) [[unlikely]] {
    send_value_with_metadata(sink, id, ctx, *md, value...);
    return;
  }
  const std::size_t attachment = request_context_access::attachment_size(ctx);
  const std::size_t frame =
      protocol::header_size + (std::size_t{0} + ... + codec::encoded_size(value)) + attachment;
  outbound_queue* out = sink.begin_reply(id, frame);
  if (out == nullptr) return;
  (codec::encode(*out, value), ...);
  sink.end_reply(&ctx, 0);
}

// Answers a request whose caller's signature fingerprint is not the handler's.
[[gnu::cold]] CORVID_API void refuse_signature(reply_sink& sink, std::uint64_t request_id,
                                               std::string_view function, std::uint16_t caller,
                                               std::uint16_t handler);

// False (and the request answered signature_mismatch) when the caller stated a fingerprint
// and it is not F's: its arguments were encoded for other types, so they are not decoded.
template <auto F>
[[gnu::always_inline]] inline bool signature_matches(reply_sink& sink, const request_view& req) {
  if (req.signature == protocol::signature_v<F> || req.signature == 0) [[likely]]
    return true;
  refuse_signature(sink, req.request_id, protocol::function_name<F>(), req.signature,
                   protocol::signature_v<F>);
  return false;
}

// Answers a request whose arguments did not decode (out of the hot path).
[[gnu::cold]] CORVID_API void refuse_arguments(reply_sink& sink, std::uint64_t request_id,
                                               std::string_view function, codec::decode_errc ec,
                                               std::size_t budget);
[[gnu::cold]] CORVID_API void refuse_arguments(reply_sink& sink, std::uint64_t request_id,
                                               std::string_view function, std::exception_ptr error);

// Decodes a request's arguments within the memory the budget allows for it, charging what the
// decoder allocated (nothing is allocated past the allowance: the decoder takes each
// allocation from the budget first). The first try uses the credit at hand (enough for
// nearly every call); a request needing more doubles the allowance and decodes again while
// the trackers grant it, so the work stays within twice the final decode. Never throws: a
// failure is answered here (bad_request, or server_busy when memory ran out) and false is
// returned.
template <auto F>
[[gnu::always_inline]] inline bool decode_arguments(reply_sink& sink, call_budget& budget,
                                                    const request_view& req, std::string_view body,
                                                    decoded_args_t<F>& args) {
  if constexpr (!codec::decoding_may_allocate_v<decoded_args_t<F>>) {
    // Scalars and views only: nothing to charge, nothing that can throw.
    const codec::decode_errc ec = codec::decode(body, args);
    if (ec == codec::decode_errc::ok) [[likely]]
      return true;
    refuse_arguments(sink, req.request_id, protocol::function_name<F>(), ec, 0);
    return false;
  }
  try {
    codec::decode_budget allowed(budget.call_allowance(0));
    codec::decode_errc ec = codec::decode(body, args, allowed);
    while (ec == codec::decode_errc::over_budget) [[unlikely]] {
      const std::size_t want = std::max<std::size_t>(2 * allowed.limit(), 64 * 1024);
      const std::size_t more = budget.call_allowance(want);
      if (more <= allowed.limit()) break;  // the trackers have nothing more to give
      args = decoded_args_t<F>{};
      allowed = codec::decode_budget(more);
      ec = codec::decode(body, args, allowed);
    }
    if (ec == codec::decode_errc::ok) [[likely]] {
      if (allowed.used() != 0) budget.charge_call(allowed.used());
      return true;
    }
    args = decoded_args_t<F>{};  // what was decoded so far goes now, not with the connection
    refuse_arguments(sink, req.request_id, protocol::function_name<F>(), ec, allowed.limit());
  } catch (...) {  // bad_alloc, or a user type's hash, comparison or constructor threw
    args = decoded_args_t<F>{};
    refuse_arguments(sink, req.request_id, protocol::function_name<F>(), std::current_exception());
  }
  return false;
}

// Charges a call's state and request copy (`cost`) before they are allocated, like everything
// a peer makes the server hold, then makes the call: new Call(sink, budget, req, a...). Null
// when there is no memory for it; the request has then been answered server_busy.
template <class Call, class... A>
[[gnu::always_inline]] inline Call* make_charged_call(reply_sink& sink, call_budget& budget,
                                                      const request_view& req, std::size_t cost,
                                                      A&&... a) {
  if (budget.call_allowance(cost) < cost) {
    sink.reply_error(req.request_id, rpc_errc::server_busy,
                     "server at its memory limit for running calls");
    return nullptr;
  }
  budget.charge_call(cost);
  try {
    return new Call(sink, budget, req, std::forward<A>(a)...);
  } catch (const std::bad_alloc&) {
    sink.reply_error(req.request_id, rpc_errc::server_busy, "out of memory for the call");
    return nullptr;
  }
}

// Runs a plain handler and queues its reply; false when it threw (answered handler_error).
template <auto F>
[[gnu::always_inline]] inline bool answer_sync(void* object, reply_sink& sink,
                                               const request_view& req, request_context& ctx,
                                               decoded_args_t<F>& args) {
  using result = typename function_traits<decltype(F)>::result_type;
  try {
    if constexpr (std::is_void_v<result>) {
      apply_handler<F>(object, ctx, args);
      send_value(sink, req.request_id, ctx);
    } else {
      decltype(auto) value = apply_handler<F>(object, ctx, args);
      send_value(sink, req.request_id, ctx, value);
    }
    return true;
  } catch (...) {
    sink.reply_error(req.request_id, rpc_errc::handler_error,
                     describe_exception(std::current_exception()));
    return false;
  }
}

// A traced request's plain handler: its trace current while it runs, its span ended after.
// Apart from the untraced path, which then pays one branch for tracing.
template <auto F>
[[gnu::noinline]] void invoke_sync_traced(void* object, reply_sink& sink, const request_view& req,
                                          decoded_args_t<F>& args) {
  request_context ctx(sink, req.request_id, req.function_id, req.attachment, req.deadline,
                      req.trace, req.metadata);
  bool ok = false;
  {
    trace_scope scope(ctx.trace());
    ok = answer_sync<F>(object, sink, req, ctx, args);
  }
  if (!ok) request_context_access::span(ctx)->status = rpc_errc::handler_error;
  sink.span_ended(ctx);
}

// A plain call ends before dispatch returns: the budget only allows the memory its arguments
// decode into (it takes no place among running calls), and it has no stream.
template <auto F>
void invoke_sync(void* object, reply_sink& sink, call_budget& budget, stream_port&,
                 const request_view& req) {
  if (!signature_matches<F>(sink, req)) return;
  decoded_args_t<F> args;
  if (!decode_arguments<F>(sink, budget, req, req.body, args)) return;
  if (req.trace != nullptr) [[unlikely]] {
    invoke_sync_traced<F>(object, sink, req, args);
    return;
  }
  request_context ctx(sink, req.request_id, req.function_id, req.attachment, req.deadline, nullptr,
                      req.metadata);
  answer_sync<F>(object, sink, req, ctx, args);
}

// A coroutine handler's request outlives the read buffer it arrived in, so its bytes are
// copied into storage owned by the call; string_view arguments point into that copy.
inline byte_buffer copy_request(const request_view& req) {
  byte_buffer b(req.held_bytes());
  if (req.metadata != nullptr) b.append(req.metadata->wire());
  b.append(req.body);
  b.append(req.attachment);
  return b;
}

// The views of a request's copy (copy_request): its attachment follows its body ...
inline std::string_view held_attachment(std::string_view body, const request_view& req) noexcept {
  return {body.data() + body.size(), req.attachment.size()};
}
// ... and its metadata entries come first.
inline metadata_view held_metadata(const byte_buffer& storage, const request_view& req) noexcept {
  if (req.metadata == nullptr) return {};
  return metadata_view(std::string_view(storage.data(), req.metadata_bytes()),
                       req.metadata->size());
}

// What a call that outlives its read buffer keeps of its request: where it answers, the
// budget it ends in (valid while `sink` is held: both are its connection), the request copy
// (arguments decoded from it may view it) and its context.
struct held_request {
  held_request(reply_sink& s, call_budget& b, const request_view& req)
      : sink(s.shared_from_this()),
        budget(b),
        request_id(req.request_id),
        storage(copy_request(req)),
        body(storage.data() + req.metadata_bytes(), req.body.size()),
        metadata(held_metadata(storage, req)),
        ctx(s, req.request_id, req.function_id, held_attachment(body, req), req.deadline, req.trace,
            req.metadata == nullptr ? nullptr : &metadata) {}
  std::shared_ptr<reply_sink> sink;
  call_budget& budget;
  std::uint64_t request_id;
  byte_buffer storage;
  std::string_view body;
  metadata_view metadata;  // its view of the copy; the context points to it
  request_context ctx;
};

template <auto F>
struct coroutine_call : pooled, held_request {
  using held_request::held_request;
  decoded_args_t<F> args;
};

// What a running coroutine call holds besides its request copy and decoded arguments: the
// call object, and the handler's coroutine frames, whose size is not known before they are
// allocated; charged as this estimate.
template <auto F>
inline constexpr std::size_t coroutine_call_cost = sizeof(coroutine_call<F>) + 1024;

template <auto F>
detached run_coroutine_call(void* object, coroutine_call<F>* call) {
  using result = typename function_traits<decltype(F)>::result_type;
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<result>, char, std::remove_cvref_t<result>>>
      value;
  try {
    if constexpr (std::is_void_v<result>) {
      co_await apply_handler<F>(object, call->ctx, call->args);
    } else {
      value.emplace(co_await apply_handler<F>(object, call->ctx, call->args));
    }
  } catch (...) {
    error = std::current_exception();
  }
  reply_sink& sink = *call->sink;
  co_await switch_to{sink.reactor()};  // the handler may have finished on another thread
  try {
    if (call->ctx.cancelled()) {
      // The caller gave up (cancel frame) or the connection closed: nobody reads a reply.
    } else if (error) {
      sink.reply_error(call->request_id, rpc_errc::handler_error, describe_exception(error));
    } else if constexpr (std::is_void_v<result>) {
      send_value(sink, call->request_id, call->ctx);
    } else {
      send_value(sink, call->request_id, call->ctx, *value);
    }
  } catch (...) {  // out of memory encoding the reply: the call still ends, with an error
    try {
      sink.reply_error(call->request_id, rpc_errc::server_busy, "out of memory for the reply");
    } catch (...) {  // the connection fails its calls as it closes
    }
  }
  call->budget.call_finished(call->ctx);
  delete call;
}

template <auto F>
void invoke_coroutine(void* object, reply_sink& sink, call_budget& budget, stream_port&,
                      const request_view& req) {
  if (!signature_matches<F>(sink, req)) return;
  auto* call = make_charged_call<coroutine_call<F>>(sink, budget, req,
                                                    coroutine_call_cost<F> + req.held_bytes());
  if (call == nullptr) return;
  if (!decode_arguments<F>(sink, budget, req, call->body, call->args)) {
    delete call;
    return;
  }
  budget.call_started(call->ctx);
  try {
    trace_scope scope(call->ctx.trace());  // the handler's start; the call may end within
    run_coroutine_call<F>(object, call);
  } catch (...) {  // the coroutine frame could not be allocated: the handler never ran
    if (auto& span = request_context_access::span(call->ctx)) span->status = rpc_errc::server_busy;
    budget.call_finished(call->ctx);
    delete call;
    sink.reply_error(req.request_id, rpc_errc::server_busy, "out of memory for the call");
  }
}

// Streaming handlers (detail/stream_invoker.hpp).
template <auto F>
void invoke_stream(void* object, reply_sink& sink, call_budget& budget, stream_port& port,
                   const request_view& req);

template <auto F>
constexpr invoke_fn make_invoker() {
  if constexpr (function_traits<decltype(F)>::is_stream) {
    return &invoke_stream<F>;
  } else if constexpr (function_traits<decltype(F)>::is_coroutine) {
    return &invoke_coroutine<F>;
  } else {
    return &invoke_sync<F>;
  }
}

}  // namespace corvid::detail
