#pragma once
// Handles to a call awaited later (pipelining): `co_await client.send_request<f>(..)` returns
// once the request is queued and yields an async_reply, which is awaited for the result.
// (`co_await client.call<f>(..)` awaits the call record at once: reply_awaitable, in
// call_state.hpp.)
#include <coroutine>
#include <memory>
#include <utility>

#include "corvid/client/call_state.hpp"

namespace corvid {

template <class State>
class async_reply;

namespace detail {
// A second handle on the call of `r`, which may cancel it while `r` is awaited elsewhere (a
// hedged call cancels its losing copies). It holds the call, so it never cancels another one;
// only one of the two may be awaited.
template <class State>
async_reply<State> share_reply(const async_reply<State>& r) noexcept;
}  // namespace detail

// The reply of a request already queued. Await it once (as an rvalue); dropping it unawaited
// is allowed: the reply is then discarded when it arrives.
template <class State>
class [[nodiscard]] async_reply {
 public:
  async_reply(detail::call_ref<State> s, std::weak_ptr<detail::call_canceller> conn) noexcept
      : s_(std::move(s)), conn_(std::move(conn)) {}
  bool ready() const noexcept { return s_->done(); }
  // Gives up on the call: it ends with `cancelled` at once (awaiting it yields that error),
  // and the server is told, so a coroutine handler still running sees
  // request_context::cancelled() and wakes from ctx.sleep_for(). No effect once it ended.
  void cancel() {
    if (s_.get() == nullptr || s_->done()) return;
    if (auto c = conn_.lock()) c->cancel(s_.get());
  }
  reply_awaitable<State> operator co_await() && noexcept {
    return reply_awaitable<State>(std::move(s_));
  }

 private:
  friend async_reply detail::share_reply<State>(const async_reply& r) noexcept;
  detail::call_ref<State> s_;
  std::weak_ptr<detail::call_canceller> conn_;
};

template <class State>
async_reply<State> detail::share_reply(const async_reply<State>& r) noexcept {
  if (r.s_.get() != nullptr) r.s_->add_ref();
  return async_reply<State>(detail::call_ref<State>(r.s_.get()), r.conn_);
}

// What send_request returns. Awaiting it suspends only while the client is at its cap
// (client_config::when_busy == wait) and resumes once the request is queued for writing, or
// once the call ended without being sent (timeout, close); the async_reply then holds that.
template <class State>
class [[nodiscard]] queued_request {
 public:
  queued_request(detail::call_ref<State> s, std::weak_ptr<detail::call_canceller> conn) noexcept
      : s_(std::move(s)), conn_(std::move(conn)) {}
  bool await_ready() const noexcept { return s_->admitted(); }
  bool await_suspend(std::coroutine_handle<> h) noexcept { return s_->wait_admission(h); }
  async_reply<State> await_resume() noexcept {
    return async_reply<State>(std::move(s_), std::move(conn_));
  }

 private:
  detail::call_ref<State> s_;
  std::weak_ptr<detail::call_canceller> conn_;
};

}  // namespace corvid
