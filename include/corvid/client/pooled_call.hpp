#pragma once
// What client_pool's call<F>, call_for<F> and call_with<F> return: co_await it for the result.
//
// A caller on a reactor that has a usable connection (the common case) gets its call started
// on that connection at once, as rpc_client::call starts it: nothing between the caller and
// the connection's reply but this object, no coroutine frame of its own. Otherwise (no
// connection there yet, a caller on no reactor of the pool) the call starts when awaited, in
// a coroutine that waits for a connection. A request that never left its connection
// (rpc_error::request_unsent) is sent once more on another; a pool that is gone by then
// cannot, and the call ends with that error.
//
// Await it once; dropping it unawaited is allowed (the reply is then discarded). Do not move
// it while a coroutine awaits it.
#include <coroutine>
#include <memory>
#include <tuple>
#include <utility>

#include "corvid/client/async_reply.hpp"
#include "corvid/client/call_state.hpp"
#include "corvid/client/client_pool.hpp"
#include "corvid/task.hpp"

namespace corvid {

template <auto F, bool WithAttachment, class... Args>
class [[nodiscard]] pooled_call final : private detail::call_waiter {
  using state = detail::call_state<detail::client_result_t<F>, WithAttachment>;

 public:
  using result_type = typename state::result_type;

  pooled_call(pooled_call&& o) noexcept
      : options_(o.options_),
        metadata_(std::move(o.metadata_)),
        args_(std::move(o.args_)),
        client_(std::move(o.client_)),
        call_(std::move(o.call_)),
        slow_(std::move(o.slow_)) {}
  pooled_call& operator=(pooled_call&&) = delete;
  pooled_call(const pooled_call&) = delete;
  pooled_call& operator=(const pooled_call&) = delete;
  ~pooled_call() = default;

  bool await_ready() const noexcept { return !slow_.valid() && call_->done() && !call_->unsent(); }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) noexcept {
    caller_ = caller;
    if (!slow_.valid()) {
      if (call_->wait(static_cast<detail::call_waiter*>(this))) return std::noop_coroutine();
      // It ended already: unsent (await_ready said so), or just now.
      if (!call_->unsent() || !start_retry()) return caller;
    }
    return slow_.operator co_await().await_suspend(caller);
  }
  result_type await_resume() {
    if (slow_.valid()) return slow_.operator co_await().await_resume();
    return call_->take();
  }

 private:
  friend class client_pool;
  using slow_task = task<result_type>;

  // Starts the call on a usable connection of the caller's reactor, or makes the coroutine
  // that waits for one.
  pooled_call(client_pool& pool, const call_options& options, Args&&... args);

  // On the thread that ended the call: resumes the caller, or starts the retry of a request
  // that never left, which resumes the caller when it ends.
  void call_done(detail::call_base& call) noexcept override {
    if (call_->unsent() && start_retry()) {
      call.resume_waiter(slow_.operator co_await().await_suspend(caller_));
      return;
    }
    call.resume_waiter(caller_);
  }
  // slow_ becomes the second attempt, on another connection; false if the pool is gone.
  bool start_retry() noexcept;

  call_options options_{};
  // A copy of call_options::metadata, for the attempts after the first (options_ points at
  // it): on the heap, so that moving this call moves no metadata a started attempt points at.
  std::unique_ptr<const corvid::metadata> metadata_;
  std::tuple<Args...> args_;
  std::shared_ptr<rpc_client> client_;  // keeps the connection open until the call ends
  detail::call_ref<state> call_;
  slow_task slow_;
  std::coroutine_handle<> caller_;
};

template <auto F, bool WithAttachment, class... Args>
pooled_call<F, WithAttachment, Args...>::pooled_call(client_pool& pool, const call_options& options,
                                                     Args&&... args)
    : options_(options), args_(std::move(args)...) {
  if (options.metadata != nullptr) [[unlikely]] {
    metadata_ = std::make_unique<const corvid::metadata>(*options.metadata);
    options_.metadata = metadata_.get();
  }
  client_pool::lease l;
  if (pool.pick(l)) {
    client_ = std::move(l.client);
    call_ = std::apply(
        [&](Args&... a) {
          return client_pool::template start_on<F, WithAttachment>(*client_, options_, a...);
        },
        args_);
    return;
  }
  slow_ = std::apply(
      [&](Args&... a) {
        return client_pool::template slow_call<F, WithAttachment>(pool.shared_from_this(), options_,
                                                                  0, std::move(a)...);
      },
      args_);
}

template <auto F, bool WithAttachment, class... Args>
bool pooled_call<F, WithAttachment, Args...>::start_retry() noexcept {
  try {
    auto pool = client_pool::owner_of(*client_);
    if (!pool) return false;
    pool->count_retry();
    slow_ = std::apply(
        [&](Args&... a) {
          return client_pool::template slow_call<F, WithAttachment>(std::move(pool), options_, 1,
                                                                    std::move(a)...);
        },
        args_);
    return true;
  } catch (...) {  // no memory for the retry's coroutine: the call ends unsent
    return false;
  }
}

}  // namespace corvid
