#pragma once
// Per-request context: a handler that declares `corvid::request_context&` as its first
// parameter sees who called, which request this is, and the request's attachment, and can set
// the reply's attachment. Attachments are raw bytes beside the encoded arguments, never encoded.
#include <array>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "corvid/call_metadata.hpp"
#include "corvid/detail/asio.hpp"
#include "corvid/detail/timer_storage.hpp"
#include "corvid/error.hpp"
#include "corvid/export.hpp"
#include "corvid/server/peer_identity.hpp"
#include "corvid/trace/trace_context.hpp"

namespace corvid {

namespace detail {
class reply_sink;
class server_connection;
class stream_link;
class method_limit;
struct request_context_access;
}  // namespace detail

class request_context;

namespace detail {
// A traced call's server span, while it runs.
struct traced_call {
  trace_context context;                       // the caller's trace, this span's id
  std::array<std::uint8_t, 8> parent_span_id;  // the caller's span
  std::chrono::system_clock::time_point start;
  std::chrono::steady_clock::time_point steady_start;
  rpc_errc status = rpc_errc::ok;
};
}  // namespace detail

// co_await ctx.sleep_for(d): like corvid::sleep_for, but ends early when the call is
// cancelled. Yields true if it slept the whole time, false if cancelled.
class CORVID_API cancellable_sleep {
 public:
  cancellable_sleep(request_context& ctx, std::chrono::steady_clock::duration d)
      : ctx_(ctx), duration_(d) {}
  bool await_ready() const noexcept;
  void await_suspend(std::coroutine_handle<> h);
  bool await_resume() const noexcept { return slept_; }

 private:
  void arm(std::coroutine_handle<> h);  // on the connection's reactor
  request_context& ctx_;
  std::chrono::steady_clock::duration duration_;
  detail::timer_storage timer_;
  bool slept_ = false;
  std::optional<trace_context> trace_;  // in scope again when the sleep resumes its awaiter
};

class CORVID_API request_context {
 public:
  request_context(
      detail::reply_sink& sink, std::uint64_t request_id, std::uint32_t function_id,
      std::string_view attachment,
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
      const trace_context* caller_trace = nullptr, const metadata_view* metadata = nullptr) noexcept
      : sink_(&sink),
        request_id_(request_id),
        function_id_(function_id),
        request_attachment_(attachment),
        deadline_(deadline),
        metadata_(metadata) {
    if (caller_trace != nullptr) [[unlikely]]
      start_span(*caller_trace);
  }

  std::uint64_t request_id() const noexcept { return request_id_; }
  std::uint32_t function_id() const noexcept { return function_id_; }
  // When the caller stops waiting (its timeout, carried on the wire), or nullopt if it has
  // none. A coroutine handler can give up on work whose result nobody will read.
  std::optional<std::chrono::steady_clock::time_point> deadline() const noexcept {
    if (deadline_ == std::chrono::steady_clock::time_point::max()) return std::nullopt;
    return deadline_;
  }
  // True once the call was cancelled: the caller cancelled it or timed out (a cancel frame
  // arrived), or its connection closed. Nobody will read the reply any more; a coroutine
  // handler should stop, and whatever it returns is discarded. A blocking handler
  // (register_blocking_handler), which cannot be woken, polls this; for it, the deadline
  // passing counts too (its reply is then `timeout`). Any thread.
  bool cancelled() const noexcept {
    if (cancelled_.load(std::memory_order_acquire)) return true;
    return deadline_cancels_ && std::chrono::steady_clock::now() >= deadline_;
  }
  // Null unless the caller sent a trace context (W3C traceparent, docs/protocol.md); then
  // this call's span: the caller's trace id and flags with a span id of its own. Client
  // calls the handler makes carry it (as the current trace, trace_scope.hpp), so their
  // servers' spans are children of this one; server_config::on_span receives the span when
  // the call ends.
  const trace_context* trace() const noexcept { return span_ ? &span_->context : nullptr; }
  // The caller's span id (the parent of trace()); zeros when the call is not traced.
  std::array<std::uint8_t, 8> parent_span_id() const noexcept {
    return span_ ? span_->parent_span_id : std::array<std::uint8_t, 8>{};
  }
  // Sleeps without blocking the thread; wakes early on cancellation (see cancellable_sleep).
  cancellable_sleep sleep_for(std::chrono::steady_clock::duration d) {
    return cancellable_sleep(*this, d);
  }
  // Cancellation for the handler's own asio operations (asio::bind_cancellation_slot): it
  // emits cancellation_type::all when the call is cancelled. Use it on the connection's
  // reactor (reactor()), one operation at a time, and clear() the slot in the operation's
  // completion handler: asio leaves the operation's cancellation handler installed.
  asio::cancellation_slot cancellation_slot() noexcept { return signal_.slot(); }
  // The reactor thread the connection (and this handler's start) runs on.
  asio::io_context& reactor() const noexcept;
  // "ip:port" of the client.
  std::string peer_address() const;
  // Who the caller proved to be on this connection: its verified client certificate (mutual
  // TLS), or its process on a Unix-domain socket; "none" (authenticated() false) otherwise.
  const peer_identity& identity() const noexcept;
  // The request's call metadata (call_options::metadata), as it arrived; valid as long as
  // request_attachment().
  metadata_view metadata() const noexcept { return metadata_ ? *metadata_ : metadata_view(); }
  // Metadata sent back with the reply (the caller reads it through
  // call_options::reply_metadata); nothing is sent while it stays empty. A reply sent with
  // metadata is refused by clients older than this release (docs/protocol.md).
  corvid::metadata& response_metadata() {
    if (!response_metadata_) response_metadata_.reset(new corvid::metadata());
    return *response_metadata_;
  }
  // The request's attachment; valid until the handler returns (coroutine handlers: until
  // the coroutine finishes).
  std::string_view request_attachment() const noexcept { return request_attachment_; }

  // The reply's attachment. A moved-in string is sent without copying; a view is copied
  // when the reply is queued, so it only needs to live until the handler returns.
  void set_response_attachment(std::string&& data) noexcept {
    owned_ = std::move(data);
    view_ = {};
    has_owned_ = true;
  }
  void set_response_attachment(std::string_view data) noexcept {
    view_ = data;
    owned_.clear();
    has_owned_ = false;
  }
  void set_response_attachment(const char* data) noexcept {
    set_response_attachment(std::string_view(data));
  }

 private:
  friend struct detail::request_context_access;
  // On the reactor: marks the call cancelled and cancels what waits on it (a stream's
  // reader and producer included).
  void cancel() noexcept;
  void start_span(const trace_context& caller) noexcept;

  detail::reply_sink* sink_;  // its connection: reactor() and peer_address() ask it
  std::uint64_t request_id_;
  std::uint32_t function_id_;
  std::string_view request_attachment_;
  std::chrono::steady_clock::time_point deadline_;
  const metadata_view* metadata_;  // null when the request carried none: one store per call
  // Deleted out of line: the destructor of every call's context stays one test, small
  // enough to inline.
  struct metadata_deleter {
    CORVID_API void operator()(corvid::metadata* md) const noexcept;
  };
  std::unique_ptr<corvid::metadata, metadata_deleter> response_metadata_;  // made on first use
  std::string owned_;
  std::string_view view_;
  bool has_owned_ = false;
  std::atomic<bool> cancelled_{false};
  asio::cancellation_signal signal_;
  // Bytes charged to the connection's in-flight tracker for this call (its request copy,
  // decoded arguments and state).
  std::size_t memory_charge_ = 0;
  // The stream this call is (null for a plain call): where the connection routes the
  // stream's item, credit and end frames.
  detail::stream_link* stream_ = nullptr;
  // The method's concurrency limit this call holds a place in (set_method_limit), if any.
  detail::method_limit* limit_ = nullptr;
  // A blocking call: cancelled() also reports its deadline (nothing can wake the handler).
  bool deadline_cancels_ = false;
  // Queued for a worker: it holds a place in its connection's share of the worker queue.
  bool blocking_ = false;
  // When the request arrived (the server's latency metrics time coroutine calls from it).
  std::chrono::steady_clock::time_point arrived_{};
  std::optional<detail::traced_call> span_;  // engaged for a traced call
};

namespace detail {

// What the server's reply writer and connection use of a request_context, kept out of its
// public interface.
struct request_context_access {
  static bool attachment_owned(const request_context& c) noexcept { return c.has_owned_; }
  static std::string take_owned_attachment(request_context& c) noexcept {
    return std::move(c.owned_);
  }
  static std::size_t attachment_size(const request_context& c) noexcept {
    return c.has_owned_ ? c.owned_.size() : c.view_.size();
  }
  static std::string_view attachment_view(const request_context& c) noexcept { return c.view_; }
  static std::string_view owned_attachment_view(const request_context& c) noexcept {
    return c.owned_;
  }
  static void cancel(request_context& c) noexcept { c.cancel(); }
  // A cancel frame or close reached the call (cancelled() may also report a deadline).
  static bool cancel_requested(const request_context& c) noexcept {
    return c.cancelled_.load(std::memory_order_acquire);
  }
  static method_limit*& limit(request_context& c) noexcept { return c.limit_; }
  static void cancel_at_deadline(request_context& c) noexcept { c.deadline_cancels_ = true; }
  static bool& blocking(request_context& c) noexcept { return c.blocking_; }
  static bool past_deadline(const request_context& c) noexcept {
    return std::chrono::steady_clock::now() >= c.deadline_;
  }
  static std::size_t& memory_charge(request_context& c) noexcept { return c.memory_charge_; }
  static detail::stream_link*& stream(request_context& c) noexcept { return c.stream_; }
  static std::chrono::steady_clock::time_point& arrived(request_context& c) noexcept {
    return c.arrived_;
  }
  static std::optional<traced_call>& span(request_context& c) noexcept { return c.span_; }
  // The reply's metadata, null when the handler set none.
  static const corvid::metadata* response_metadata(const request_context& c) noexcept {
    return c.response_metadata_ && !c.response_metadata_->empty() ? c.response_metadata_.get()
                                                                  : nullptr;
  }
};

}  // namespace detail

}  // namespace corvid
