#pragma once
// The shared state of one client call: filled on the connection's reactor, awaited by the
// caller on any thread. Completion is a lock-free handshake on `waiter_`: whoever comes
// second (the reply or the awaiting coroutine) resumes the coroutine. Also the owning
// reference to it (call_ref) and what call<f>() returns to await it (reply_awaitable).
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "corvid/codec/codec.hpp"
#include "corvid/detail/frame_allocator.hpp"
#include "corvid/error.hpp"
#include "corvid/expected.hpp"
#include "corvid/export.hpp"
#include "corvid/trace/trace_scope.hpp"

namespace corvid {
class metadata;  // corvid/call_metadata.hpp

// A result together with the reply's attachment (call_with_attachment / send_request_with).
template <class R>
struct with_attachment {
  R value;
  std::string attachment;
};
template <>
struct with_attachment<void> {
  std::string attachment;
};

namespace detail {

class client_stream;  // client/stream_call.hpp
class call_base;
struct call_slot;  // src/client: the connection's part of a call, kept in call_base's slot area

// What waits on a call when no coroutine does directly: an awaitable that decides, once the
// call ended, what to resume (client_pool's calls retry a request that never left on another
// connection). Lives at an address aligned to at least 4.
class call_waiter {
 public:
  // The call ended; runs on the thread that ended it, in place of resuming a coroutine.
  virtual void call_done(call_base& call) noexcept = 0;

 protected:
  ~call_waiter() = default;
};

class call_base : public pooled {
 public:
  virtual ~call_base() = default;
  // Reactor thread: a reply arrived (status ok: body is the encoded result).
  virtual void set_reply(rpc_errc status, std::string_view body,
                         std::string_view attachment) noexcept = 0;
  virtual void set_error(rpc_error e) noexcept = 0;
  // A stream's state (item and credit frames go to it), or null for a plain call.
  virtual client_stream* as_stream() noexcept { return nullptr; }

  // After set_reply/set_error: wakes the awaiting coroutine, if it is already waiting.
  void complete() noexcept {
    void* w = waiter_.exchange(done_marker(), std::memory_order_acq_rel);
    if (w != nullptr) resume(w);
  }
  void fail(rpc_errc code, std::string message) noexcept {
    set_error(rpc_error(code, std::move(message)));
    complete();
  }
  bool done() const noexcept { return waiter_.load(std::memory_order_acquire) == done_marker(); }
  // Registers the waiting coroutine; false if the result is already there.
  bool wait(std::coroutine_handle<> h) noexcept {
    void* expected = nullptr;
    return waiter_.compare_exchange_strong(expected, h.address(), std::memory_order_acq_rel);
  }
  // Registers a call_waiter instead (told through call_done); false if the result is there.
  bool wait(call_waiter* w) noexcept {
    void* expected = nullptr;
    void* tagged = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(w) | waiter_tag);
    return waiter_.compare_exchange_strong(expected, tagged, std::memory_order_acq_rel);
  }
  // Resumes `h` as the call's own waiter would be: with the call's trace context in scope.
  // The resumed coroutine may free the call.
  void resume_waiter(std::coroutine_handle<> h) noexcept {
    if (trace_) [[unlikely]] {
      resume_traced(h, trace_);
    } else {
      h.resume();
    }
  }

  // Admission (client_config::when_busy == wait): a call the connection had no room for is
  // parked until it has; send_request's awaiter suspends until then. A second lock-free
  // handshake like the one above, on `admit_waiter_`.
  void mark_parked() noexcept { admit_waiter_.store(nullptr, std::memory_order_relaxed); }
  bool admitted() const noexcept {
    return admit_waiter_.load(std::memory_order_acquire) == done_marker();
  }
  // Registers the coroutine waiting for admission; false if the call was already admitted.
  bool wait_admission(std::coroutine_handle<> h) noexcept {
    void* expected = nullptr;
    return admit_waiter_.compare_exchange_strong(expected, h.address(), std::memory_order_acq_rel);
  }
  // The request was queued for writing, or the call ended while parked: wakes the waiter.
  void admit() noexcept {
    void* w = admit_waiter_.exchange(done_marker(), std::memory_order_acq_rel);
    if (w != nullptr && w != done_marker()) resume(w);
  }

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // The trace context the call carries (call_options::trace, or the current one when it was
  // made): sent with the request, and in scope again when the caller resumes.
  const std::optional<trace_context>& trace() const noexcept { return trace_; }
  void set_trace(const trace_context& t) noexcept { trace_ = t; }
  // Where the reply's metadata goes (call_options::reply_metadata); null: nowhere. Written on
  // the thread that ends the call, before its caller resumes.
  metadata* reply_metadata() const noexcept { return reply_metadata_; }
  void set_reply_metadata(metadata* md) noexcept { reply_metadata_ = md; }

 private:
  // Resumes the coroutine waiting on this call, or tells its call_waiter (either may free the
  // call).
  void resume(void* waiter) noexcept {
    if (const auto bits = reinterpret_cast<std::uintptr_t>(waiter); bits & waiter_tag)
        [[unlikely]] {
      reinterpret_cast<call_waiter*>(bits & ~waiter_tag)->call_done(*this);
      return;
    }
    resume_waiter(std::coroutine_handle<>::from_address(waiter));
  }
  static void* done_marker() noexcept { return reinterpret_cast<void*>(1); }
  // Marks a waiter_ that is a call_waiter, not a coroutine (both are aligned to at least 4;
  // 1 is the done marker).
  static constexpr std::uintptr_t waiter_tag = 2;

  friend struct call_slot;
  std::optional<trace_context> trace_;
  metadata* reply_metadata_ = nullptr;
  // The connection's part of the call (its request id, deadline links, ...): a call_slot,
  // which only the client's internals interpret. Kept here, not in a table of the connection's,
  // so that a call costs no allocation and no lookup more. Zero bytes: a call never filed.
  static constexpr std::size_t slot_size = 72;
  static constexpr std::size_t slot_align = 8;
  alignas(slot_align) std::byte slot_[slot_size]{};
  std::atomic<void*> waiter_{nullptr};
  std::atomic<void*> admit_waiter_{done_marker()};  // calls start admitted
  std::atomic<int> refs_{1};
};

CORVID_API std::string undecodable_reply_message(std::string_view why);
// What a call that never got a reply or an error answers (made when asked, not per call).
inline rpc_error never_completed() {
  return rpc_error(rpc_errc::cancelled, "call never completed");
}

// What an async_reply uses to cancel its call: the connection it was sent on.
class call_canceller {
 public:
  // Ends `call` with `cancelled` (if it has not ended) and tells the server. Any thread.
  virtual void cancel(call_base* call) = 0;
  virtual ~call_canceller() = default;
};

// R: the client-side result type (owning); A: whether the caller wants the reply attachment.
template <class R, bool A>
class call_state final : public call_base {
 public:
  using value_type = std::conditional_t<A, with_attachment<R>, R>;
  using result_type = expected<value_type, rpc_error>;

  void set_reply(rpc_errc status, std::string_view body,
                 std::string_view attachment) noexcept override {
    set_ = true;
    try {
      if (status != rpc_errc::ok) {
        std::string message;
        if (codec::decode(body, message) != codec::decode_errc::ok) message.clear();
        result_ = unexpected(rpc_error(status, std::move(message)));
        return;
      }
      value_type v{};
      auto ec = decode_value(body, v);
      if (ec != codec::decode_errc::ok) {
        result_ = unexpected(
            rpc_error(rpc_errc::protocol_error, undecodable_reply_message(codec::to_string(ec))));
        return;
      }
      if constexpr (A) v.attachment.assign(attachment);
      result_ = std::move(v);
    } catch (...) {  // only std::bad_alloc can get here
      result_ = unexpected(rpc_error(rpc_errc::message_too_large, "out of memory decoding reply"));
    }
  }
  void set_error(rpc_error e) noexcept override {
    set_ = true;
    result_ = unexpected(std::move(e));
  }
  result_type take() {
    if (!set_) return unexpected(never_completed());
    return std::move(result_);
  }
  // It ended with an error saying its request never left the client (rpc_error::
  // request_unsent): the server cannot have seen it.
  bool unsent() const noexcept { return set_ && !result_ && result_.error().request_unsent(); }

 private:
  static codec::decode_errc decode_value(std::string_view body, value_type& v) {
    if constexpr (std::is_void_v<R>) {
      return body.empty() ? codec::decode_errc::ok : codec::decode_errc::trailing_bytes;
    } else if constexpr (A) {
      return codec::decode(body, v.value);
    } else {
      return codec::decode(body, v);
    }
  }
  // Until set_reply or set_error: take() answers never_completed(). Not stored here as an
  // error with that message, which is longer than std::string's inline buffer: it cost every
  // call a heap allocation.
  result_type result_{unexpected(rpc_error(rpc_errc::cancelled))};
  bool set_ = false;
};

// Specialisation detail: value_type for R = void without attachment.
template <>
class call_state<void, false> final : public call_base {
 public:
  using result_type = expected<void, rpc_error>;
  void set_reply(rpc_errc status, std::string_view body, std::string_view) noexcept override {
    set_ = true;
    if (status != rpc_errc::ok) {
      std::string message;
      try {
        if (codec::decode(body, message) != codec::decode_errc::ok) message.clear();
      } catch (...) {
      }
      result_ = unexpected(rpc_error(status, std::move(message)));
    } else if (!body.empty()) {
      result_ = unexpected(rpc_error(rpc_errc::protocol_error, "reply to a void call has a body"));
    } else {
      result_ = result_type{};
    }
  }
  void set_error(rpc_error e) noexcept override {
    set_ = true;
    result_ = unexpected(std::move(e));
  }
  result_type take() {
    if (!set_) return unexpected(never_completed());
    return std::move(result_);
  }
  // It ended with an error saying its request never left the client (rpc_error::
  // request_unsent): the server cannot have seen it.
  bool unsent() const noexcept { return set_ && !result_ && result_.error().request_unsent(); }

 private:
  // Until set_reply or set_error: take() answers never_completed(). Not stored here as an
  // error with that message, which is longer than std::string's inline buffer: it cost every
  // call a heap allocation.
  result_type result_{unexpected(rpc_error(rpc_errc::cancelled))};
  bool set_ = false;
};

// Owning reference to a call_state.
template <class State>
class call_ref {
 public:
  call_ref() = default;
  explicit call_ref(State* s) noexcept : s_(s) {}  // adopts one reference
  call_ref(call_ref&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  call_ref& operator=(call_ref&& o) noexcept {
    if (this != &o) {
      if (s_) s_->release();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  ~call_ref() {
    if (s_) s_->release();
  }
  State* get() const noexcept { return s_; }
  State* operator->() const noexcept { return s_; }

 private:
  State* s_ = nullptr;
};

}  // namespace detail

// What call<f>() returns: the call record, awaited once for its result.
template <class State>
class [[nodiscard]] reply_awaitable {
 public:
  explicit reply_awaitable(detail::call_ref<State> s) noexcept : s_(std::move(s)) {}
  bool await_ready() const noexcept { return s_->done(); }
  bool await_suspend(std::coroutine_handle<> h) noexcept { return s_->wait(h); }
  typename State::result_type await_resume() { return s_->take(); }

 private:
  detail::call_ref<State> s_;
};

}  // namespace corvid
