#pragma once
// Streaming handlers on the server (docs/architecture.md, "Streams"). A stream call is a
// coroutine call (it counts against the connection's calls, is cancelled like one, and stop()
// waits for it) that also has a producer — the handler's stream<T> coroutine, parked at a
// co_yield while the client has granted no credit or the connection's queue is full — and/or
// an inbox for the items the client writes, read through the handler's stream_reader.
#include <algorithm>
#include <atomic>
#include <coroutine>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "corvid/detail/asio.hpp"
#include "corvid/detail/handler_invoker.hpp"
#include "corvid/detail/recycled_handler.hpp"
#include "corvid/detail/stream_link.hpp"
#include "corvid/detail/switch_to.hpp"
#include "corvid/runtime/io_pool.hpp"
#include "corvid/stream/stream.hpp"
#include "corvid/stream/stream_reader.hpp"

namespace corvid::detail {

// String items this large are queued without a copy (like a reply's large attachment).
inline constexpr std::size_t zero_copy_item_bytes = 64 * 1024;

template <auto F>
class stream_call final
    : public pooled,
      public held_request,
      public stream_link,
      public stream_inbox,
      // A handler without a stream of items never yields: its sink (of int) is unused.
      public item_sink<std::conditional_t<function_traits<decltype(F)>::streams_out,
                                          typename function_traits<decltype(F)>::out_item, int>> {
  using traits = function_traits<decltype(F)>;
  using reader_t = std::conditional_t<traits::streams_in, stream_reader<typename traits::in_item>,
                                      stream_reader<int>>;

 public:
  stream_call(reply_sink& s, call_budget& b, const request_view& req, stream_port& p)
      : held_request(s, b, req), stream_inbox(p.stream_window(), p.max_stream_window()), port(p) {}

  stream_port& port;  // its connection's, like `budget`: valid while `sink` is held
  decoded_args_t<F> args;

  // ---- stream_link (reactor) ----
  void on_item(std::string_view item) override {
    ++moved;
    const std::size_t cost = protocol::stream_item_cost(item.size());
    std::coroutine_handle<> wake;
    const pushed result = !traits::streams_in || replied_ ? pushed::dropped : push(item, wake);
    if (result != pushed::kept) port.release_items(cost);  // not kept: its charge returns
    if (result == pushed::dropped) return;
    if (result == pushed::over) {
      // The client wrote past its credit: the server will not hold more for it.
      replied_ = true;
      sink->reply_error(request_id, rpc_errc::bad_request,
                        "stream item written past the credit the server granted");
      request_context_access::cancel(ctx);
      return;
    }
    if (wake) resume_handler(wake);
  }
  void on_writes_closed() override {
    ++moved;
    if (auto w = end(rpc_error{})) resume_handler(w);
  }
  void on_credit(std::uint32_t bytes) override {
    ++moved;
    credit_ += bytes;
    if (parked_ && credit_ > 0) retry_send();
  }
  void on_writable() override {
    waiting_writable_ = false;
    if (parked_) retry_send();
  }
  void on_written() noexcept override {
    // Posted: the connection may be closing, walking its running calls.
    post_held([this] {
      lent_ = false;
      if (!parked_) return;
      if (ctx.cancelled()) {
        abort_producer();
        return;
      }
      resume_handler(std::exchange(parked_, {}));  // last: the stream may finish and free this
    });
  }
  void on_cancel() noexcept override {
    // Not inline: the connection may be walking its running calls. (Out of memory to post:
    // the stream ends when the connection closes.)
    post_held([this] {
      if (auto w = end(rpc_error(rpc_errc::cancelled, "stream cancelled"), true)) {
        resume_handler(w);
      } else if (parked_) {
        abort_producer();
      }
    });
  }
  void on_idle(std::chrono::milliseconds limit) noexcept override {
    if (!replied_) {
      replied_ = true;
      try {
        sink->reply_error(request_id, rpc_errc::timeout,
                          "stream idle for " + std::to_string(limit.count()) +
                              " ms: nothing moved either way (server_config::stream_idle_timeout)");
      } catch (...) {  // no memory for the reply: the client's own deadline, or its close, ends it
      }
    }
    request_context_access::cancel(ctx);  // on_cancel ends the stream here
  }

  // ---- stream_inbox (the handler's reader) ----
  void grant(std::uint32_t bytes) noexcept override {
    if (current_reactor() != &sink->reactor()) {  // the handler reads on another thread
      post_held([this, bytes] { grant(bytes); });
      return;
    }
    if (!ctx.cancelled()) {
      ++moved;
      try {
        port.send_credit(request_id, bytes);
      } catch (...) {  // no memory for a credit frame: the client waits; the stream may stall
      }
    }
  }
  void abandon() noexcept override {}  // the handler stopped reading: its result ends the call
  void on_taken(std::size_t cost) noexcept override {
    if (current_reactor() == &sink->reactor()) {
      port.release_items(cost);
      return;
    }
    // The handler reads from another thread: the connection's memory is the reactor's.
    post_held([this, cost] { port.release_items(cost); });
  }
  std::size_t reserve_growth(std::size_t bytes) noexcept override {
    return port.reserve_stream_growth(bytes);
  }
  void retain() noexcept override { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept override {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // ---- item_sink (the handler's co_yield) ----
  using out_t = std::conditional_t<traits::streams_out, typename traits::out_item, int>;
  bool send_or_park(out_t& item, std::coroutine_handle<> h) override {
    staged_ = &item;
    if (current_reactor() != &sink->reactor()) {  // the handler moved to another thread
      parked_ = h;
      post_held([this] { retry_send(); });  // not posted: parked until the stream is cancelled
      return false;
    }
    if (ctx.cancelled()) {
      parked_ = h;
      schedule_abort();
      return false;
    }
    // Parked only once it did not throw: an oversized item throws out of this co_yield into
    // the handler, which then goes on (or ends); no later credit may resume it from here.
    if (credit_ > 0 && send_staged() && !lent_) return true;
    parked_ = h;  // no credit, no room, or its item lent to the write until written
    hold_parked();
    return false;
  }
  void finished(std::coroutine_handle<> h, std::exception_ptr error) noexcept override {
    // On another thread: finished on the reactor (no memory to post: here, as a call does).
    if (current_reactor() != &sink->reactor() &&
        post_held([this, h, error] { finish(h, error); })) {
      return;
    }
    finish(h, error);
  }

  // Resumes the handler's coroutine (its producer, or one awaiting its reader) with the
  // call's trace context current, as at its start. A copy: the stream may end and free this.
  void resume_handler(std::coroutine_handle<> h) {
    if (const trace_context* t = ctx.trace()) [[unlikely]] {
      resume_traced(h, *t);
    } else {
      h.resume();
    }
  }
  // Starts the handler: for stream<T> handlers their coroutine, for task handlers (client
  // streaming) a detached runner that replies with their result.
  void start(void* object) {
    reader_t reader = make_reader();
    if constexpr (traits::streams_out) {
      auto s = call_with_reader(object, std::move(reader));
      auto h = s.release();
      h.promise().sink = this;
      producer_ = h;
      h.resume();
    } else {
      run_task(object, this, std::move(reader));
    }
  }

 private:
  template <class Reader>
  decltype(auto) call_with_reader(void* object, Reader&& reader) {
    // The handler's wire arguments, then its reader (when it takes one).
    return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
      auto invoke = [&](auto&&... extra) -> decltype(auto) {
        using params = wire_params_t<F>;
        if constexpr (std::is_void_v<typename traits::class_type>) {
          if constexpr (traits::wants_context) {
            return F(ctx, static_cast<std::tuple_element_t<I, params>&&>(std::get<I>(args))...,
                     std::forward<decltype(extra)>(extra)...);
          } else {
            return F(static_cast<std::tuple_element_t<I, params>&&>(std::get<I>(args))...,
                     std::forward<decltype(extra)>(extra)...);
          }
        } else {
          auto* self = static_cast<typename traits::class_type*>(object);
          if constexpr (traits::wants_context) {
            return (self->*F)(ctx,
                              static_cast<std::tuple_element_t<I, params>&&>(std::get<I>(args))...,
                              std::forward<decltype(extra)>(extra)...);
          } else {
            return (self->*F)(static_cast<std::tuple_element_t<I, params>&&>(std::get<I>(args))...,
                              std::forward<decltype(extra)>(extra)...);
          }
        }
      };
      if constexpr (traits::streams_in) {
        return invoke(std::forward<Reader>(reader));
      } else {
        return invoke();
      }
    }(std::make_index_sequence<std::tuple_size_v<wire_params_t<F>>>{});
  }

  reader_t make_reader() {
    if constexpr (traits::streams_in) {
      retain();  // the reader's reference
      return reader_t(static_cast<stream_inbox*>(this));
    } else {
      return reader_t();
    }
  }

  static detached run_task(void* object, stream_call* self, reader_t reader) {
    using result = typename traits::result_type;
    std::exception_ptr error;
    std::optional<std::conditional_t<std::is_void_v<result>, char, std::remove_cvref_t<result>>>
        value;
    try {
      if constexpr (std::is_void_v<result>) {
        co_await self->call_with_reader(object, std::move(reader));
      } else {
        value.emplace(co_await self->call_with_reader(object, std::move(reader)));
      }
    } catch (...) {
      error = std::current_exception();
    }
    co_await switch_to{self->sink->reactor()};
    if (!self->ctx.cancelled() && !self->replied_) {
      reply_sink& to = *self->sink;
      try {
        if (error) {
          to.reply_error(self->request_id, rpc_errc::handler_error, describe_exception(error));
        } else if constexpr (std::is_void_v<result>) {
          send_value(to, self->request_id, self->ctx);
        } else {
          send_value(to, self->request_id, self->ctx, *value);
        }
      } catch (...) {
        try {
          to.reply_error(self->request_id, rpc_errc::server_busy, "out of memory for the reply");
        } catch (...) {
        }
      }
    }
    self->end_call();
  }

  // Reactor: sends the staged item if the queue takes it (false: parked for writes).
  bool send_staged() {
    using T = typename function_traits<decltype(F)>::out_item;
    if constexpr (traits::streams_out) {
      T& item = *static_cast<T*>(staged_);
      const std::size_t payload = codec::encoded_size(item);
      release_held();  // its charge moves to the reply queue's (held again if it must wait)
      outbound_queue* out =
          port.begin_item(request_id, protocol::header_size + payload);  // may throw
      if (out == nullptr) {
        if (!waiting_writable_) {
          waiting_writable_ = true;
          port.wait_writable(this);
        }
        return false;
      }
      std::size_t owned = 0;
      if constexpr (std::is_same_v<T, std::string>) {
        if (item.size() >= zero_copy_item_bytes) {
          // Queued as it is (moved: the promise's own copy), gathered by the write.
          const std::uint32_t len = codec::length_prefix(item.size());
          codec::write_varint(out->extend(codec::varint_size(len)), len);
          owned = item.size();
          out->append_owned(std::move(item));
        }
      }
      if constexpr (std::is_same_v<T, std::string_view>) {
        if (item.size() >= zero_copy_item_bytes) {
          // Written from the producer's memory, which stays valid while it is suspended: it
          // stays parked at this co_yield until the write is done (on_written).
          const std::uint32_t len = codec::length_prefix(item.size());
          codec::write_varint(out->extend(codec::varint_size(len)), len);
          owned = item.size();
          out->append_borrowed(item);
          lent_ = true;
          port.wait_written(this);
        }
      }
      if (owned == 0) codec::encode(*out, item);
      port.end_item(owned);
      ++moved;
      credit_ -= static_cast<std::int64_t>(protocol::stream_item_cost(payload));
      return true;
    } else {
      return true;
    }
  }
  void retry_send() {
    if (!parked_ || lent_) return;  // lent: sent already, on_written resumes it
    if (ctx.cancelled()) {
      abort_producer();
      return;
    }
    bool sent = false;
    try {
      sent = credit_ > 0 && send_staged();
    } catch (...) {  // an oversized item (or no memory for it): the stream ends with it
      if (!replied_) {
        replied_ = true;
        try {
          sink->reply_error(request_id, rpc_errc::handler_error,
                            describe_exception(std::current_exception()));
        } catch (...) {
        }
      }
      abort_producer();
      return;
    }
    if (!sent) {
      hold_parked();
      return;
    }
    if (lent_) return;
    resume_handler(std::exchange(parked_, {}));  // last: the stream may finish and free this
  }
  // The producer waits at its co_yield with the item it yielded (not lent to a write): the
  // item is memory held for this peer as long as its client grants no credit, so it is
  // charged to the connection first. No memory for it: the stream ends with server_busy and
  // the producer (with its item) is destroyed now, not kept.
  void hold_parked() {
    if constexpr (traits::streams_out) {
      if (held_ != 0 || lent_ || !parked_ || aborting_) return;
      using T = typename traits::out_item;
      const std::size_t bytes =
          std::max<std::size_t>(1, codec::encoded_size(*static_cast<T*>(staged_)));
      if (port.hold_item(bytes)) {
        held_ = bytes;
        return;
      }
      if (!replied_) {
        replied_ = true;
        try {
          sink->reply_error(request_id, rpc_errc::server_busy,
                            "stream ended: no memory to hold its next item (" +
                                std::to_string(bytes) +
                                " bytes) while the client grants no credit");
        } catch (...) {
        }
      }
      aborting_ = true;
      request_context_access::cancel(ctx);
      schedule_abort();
    }
  }
  // The held item was queued or dropped: its charge returns.
  void release_held() noexcept {
    if (held_ != 0) port.release_items(std::exchange(held_, 0));
  }
  void schedule_abort() {
    post_held([this] {
      if (parked_) abort_producer();
    });
  }
  // A cancelled stream's producer is not resumed: destroyed where it waits (once the write
  // no longer reads the item it lent: on_written aborts it then).
  void abort_producer() {
    if (lent_) return;
    auto h = std::exchange(parked_, {});
    if (!h || h != producer_) {  // parked inside something else: it ends on its own
      parked_ = h;
      return;
    }
    producer_ = {};
    h.destroy();
    release_held();
    end_call();
  }
  void finish(std::coroutine_handle<> h, std::exception_ptr error) noexcept {
    if (!ctx.cancelled() && !replied_) {
      try {
        if (error) {
          sink->reply_error(request_id, rpc_errc::handler_error, describe_exception(error));
        } else {
          send_value(*sink, request_id, ctx);  // the clean end: an empty reply
        }
      } catch (...) {
      }
    }
    producer_ = {};
    parked_ = {};
    h.destroy();
    release_held();
    end_call();  // last: it may free this
  }
  void end_call() noexcept {
    if (waiting_writable_) port.forget_writable(this);
    request_context_access::stream(ctx) = nullptr;
    // No message: the handler that read this inbox has ended, and a message longer than
    // std::string's inline buffer cost every stream call an allocation.
    static_cast<void>(end(rpc_error(rpc_errc::cancelled), true));
    // Ended: its window, which started at stream_window(), grows no more.
    if constexpr (traits::streams_in) {
      port.release_stream_growth(window() - port.stream_window());
    }
    port.stream_closed();
    budget.call_finished(ctx);
    release();  // the call's reference
  }

  // Runs `fn` on the connection's reactor, holding a reference to this call until it has run
  // or a stopped reactor destroyed it unrun (stop() returns once no call runs, but work posted
  // by a call's last moments may still be queued). False if it could not be posted.
  template <class Fn>
  bool post_held(Fn fn) noexcept {
    struct held {
      stream_call* call;
      explicit held(stream_call* c) noexcept : call(c) { call->retain(); }
      held(held&& o) noexcept : call(std::exchange(o.call, nullptr)) {}
      held& operator=(held&&) = delete;
      ~held() {
        if (call != nullptr) call->release();
      }
    };
    try {
      asio::post(sink->reactor(),
                 recycled([ref = held(this), fn = std::move(fn)]() mutable { fn(); }));
      return true;
    } catch (...) {
      return false;
    }
  }

  std::atomic<int> refs_{1};  // the call's own; the reader and posted work add theirs
  std::int64_t credit_ = protocol::initial_stream_credit;  // the client's grant
  void* staged_ = nullptr;                                 // the item of the parked co_yield
  std::coroutine_handle<> parked_;                         // the producer waiting at co_yield
  std::coroutine_handle<> producer_;  // the handler's stream<T> coroutine, until it ends
  bool waiting_writable_ = false;
  bool lent_ = false;      // its item is borrowed by the connection's write (parked until written)
  bool replied_ = false;   // answered already (a protocol violation)
  bool aborting_ = false;  // refused memory for its held item: the producer is being ended
  std::size_t held_ = 0;   // bytes of the parked producer's item charged (hold_parked)
};

template <auto F>
void invoke_stream(void* object, reply_sink& sink, call_budget& budget, stream_port& port,
                   const request_view& req) {
  if (!signature_matches<F>(sink, req) || !port.admit_stream(req.request_id)) return;
  // The call and its request copy are charged first; the items the client writes are
  // charged by the connection as each arrives (and released as the handler takes it).
  const std::size_t window = function_traits<decltype(F)>::streams_in ? port.stream_window() : 0;
  auto* call = make_charged_call<stream_call<F>>(
      sink, budget, req, sizeof(stream_call<F>) + 1024 + req.held_bytes(), port);
  if (call == nullptr) {
    port.stream_closed();
    return;
  }
  if (!decode_arguments<F>(sink, budget, req, call->body, call->args)) {
    port.stream_closed();
    call->release();
    return;
  }
  request_context_access::stream(call->ctx) = call;
  budget.call_started(call->ctx);
  try {
    if (window != 0) port.send_credit(req.request_id, static_cast<std::uint32_t>(window));
    trace_scope scope(call->ctx.trace());
    call->start(object);
  } catch (...) {  // the coroutine frame could not be allocated: the handler never ran
    if (auto& span = request_context_access::span(call->ctx)) span->status = rpc_errc::server_busy;
    request_context_access::stream(call->ctx) = nullptr;
    port.stream_closed();
    budget.call_finished(call->ctx);
    call->release();
    sink.reply_error(req.request_id, rpc_errc::server_busy, "out of memory for the stream");
  }
}

}  // namespace corvid::detail
