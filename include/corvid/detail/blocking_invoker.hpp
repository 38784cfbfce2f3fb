#pragma once
// Blocking handlers (rpc_server::register_blocking_handler): plain functions that may block
// (a database call, a disk read) and so must not run on a reactor. The request is decoded on
// the connection's reactor like any other; the call then waits in the worker pool's queue,
// runs on a worker thread, and its reply is posted back to the reactor, which encodes and
// writes it as for a coroutine call. The call holds its connection alive meanwhile.
#include <chrono>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

#include "corvid/detail/blocking_job.hpp"
#include "corvid/detail/handler_invoker.hpp"
#include "corvid/export.hpp"

namespace corvid::detail {

// Posts finish(job) to `reactor`. Never fails: a worker that cannot allocate the post waits
// for memory and tries again (the call must end, and only the reactor may end it).
CORVID_API void post_blocking_completion(asio::io_context& reactor, void (*finish)(blocking_job*),
                                         blocking_job* job) noexcept;

// Answers a blocking call whose deadline passed (out of the hot path).
[[gnu::cold]] CORVID_API void refuse_expired(reply_sink& sink, std::uint64_t request_id, bool ran,
                                             std::chrono::steady_clock::duration waited);

template <auto F>
struct blocking_call : blocking_job, pooled {
  using result = typename function_traits<decltype(F)>::result_type;
  // What the handler returned, kept until the reactor encodes it.
  using stored = std::conditional_t<std::is_void_v<result>, char, std::remove_cvref_t<result>>;
  enum class outcome : unsigned char { dropped, expired, value, failed };

  blocking_call(reply_sink& s, call_budget& b, const request_view& req, void* obj)
      : sink(s.shared_from_this()),
        budget(b),
        object(obj),
        request_id(req.request_id),
        storage(copy_request(req)),
        body(storage.data() + req.metadata_bytes(), req.body.size()),
        metadata(held_metadata(storage, req)),
        ctx(s, req.request_id, req.function_id, held_attachment(body, req), req.deadline, req.trace,
            req.metadata == nullptr ? nullptr : &metadata) {
    request_context_access::cancel_at_deadline(ctx);
  }
  std::shared_ptr<reply_sink> sink;  // held: the call answers after a worker ran it
  call_budget& budget;               // the same connection's: valid while `sink` is held
  void* object;
  std::uint64_t request_id;
  byte_buffer storage;
  std::string_view body;
  decoded_args_t<F> args;
  metadata_view metadata;  // its view of the copy; the context points to it
  request_context ctx;
  outcome done = outcome::dropped;
  std::chrono::steady_clock::duration waited{};  // in the queue
  std::optional<stored> value;
  std::exception_ptr error;
};

// What a queued blocking call holds besides its request copy and decoded arguments.
template <auto F>
inline constexpr std::size_t blocking_call_cost = sizeof(blocking_call<F>);

// On the reactor, once the worker is done with the call.
template <auto F>
void finish_blocking(blocking_job* job) noexcept {
  auto* call = static_cast<blocking_call<F>*>(job);
  reply_sink& sink = *call->sink;
  using outcome = typename blocking_call<F>::outcome;
  try {
    if (request_context_access::cancel_requested(call->ctx)) {
      // A cancel frame, or the connection closed: nobody reads a reply.
    } else if (call->done == outcome::expired ||
               (call->done != outcome::dropped &&
                request_context_access::past_deadline(call->ctx))) {
      // The caller has given up: a value computed past the deadline (possibly cut short
      // because cancelled() said so) is not sent as a success.
      refuse_expired(sink, call->request_id, call->done != outcome::expired, call->waited);
    } else if (call->done == outcome::failed) {
      sink.reply_error(call->request_id, rpc_errc::handler_error, describe_exception(call->error));
    } else if (call->done == outcome::value) {
      if constexpr (std::is_void_v<typename blocking_call<F>::result>) {
        send_value(sink, call->request_id, call->ctx);
      } else {
        send_value(sink, call->request_id, call->ctx, *call->value);
      }
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

// On a worker thread.
template <auto F>
void execute_blocking(blocking_job* job) noexcept {
  auto* call = static_cast<blocking_call<F>*>(job);
  using outcome = typename blocking_call<F>::outcome;
  call->waited = std::chrono::steady_clock::now() - call->queued_at;
  if (request_context_access::cancel_requested(call->ctx)) {
    call->done = outcome::dropped;  // cancelled while it waited: never runs
  } else if (request_context_access::past_deadline(call->ctx)) {
    call->done = outcome::expired;  // the caller gave up while it waited: never runs
  } else {
    try {
      trace_scope scope(call->ctx.trace());
      if constexpr (std::is_void_v<typename blocking_call<F>::result>) {
        apply_handler<F>(call->object, call->ctx, call->args);
      } else {
        call->value.emplace(apply_handler<F>(call->object, call->ctx, call->args));
      }
      call->done = outcome::value;
    } catch (...) {
      call->error = std::current_exception();
      call->done = outcome::failed;
    }
  }
  post_blocking_completion(call->sink->reactor(), &finish_blocking<F>, call);
}

template <auto F>
void invoke_blocking(void* object, reply_sink& sink, call_budget& budget, stream_port&,
                     const request_view& req) {
  if (!signature_matches<F>(sink, req)) return;
  // The call waits in the queue with its request copy, decoded arguments and state.
  auto* call = make_charged_call<blocking_call<F>>(
      sink, budget, req, blocking_call_cost<F> + req.held_bytes(), object);
  if (call == nullptr) return;
  if (!decode_arguments<F>(sink, budget, req, call->body, call->args)) {
    delete call;
    return;
  }
  call->execute = &execute_blocking<F>;
  budget.call_started(call->ctx);
  call->bytes = request_context_access::memory_charge(call->ctx);
  bool queued = false;
  try {
    queued = budget.submit_blocking(*call, req.request_id);
  } catch (...) {  // out of memory for the refusal: the connection closes
    budget.call_finished(call->ctx);
    delete call;
    throw;
  }
  if (!queued) {
    budget.call_finished(call->ctx);
    delete call;
  }
}

template <auto F>
constexpr invoke_fn make_blocking_invoker() {
  static_assert(!function_traits<decltype(F)>::is_coroutine,
                "register_blocking_handler: a coroutine handler does not block its thread; "
                "register it with register_handler");
  return &invoke_blocking<F>;
}

}  // namespace corvid::detail
