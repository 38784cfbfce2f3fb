#include "corvid/server/request_context.hpp"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/post.hpp>

#include "corvid/detail/reply_channel.hpp"
#include "corvid/detail/stream_link.hpp"
#include "corvid/runtime/io_pool.hpp"

#include "../runtime/timer_access.hpp"

namespace corvid {

void request_context::cancel() noexcept {
  cancelled_.store(true, std::memory_order_release);
  signal_.emit(asio::cancellation_type::all);
  if (stream_ != nullptr) stream_->on_cancel();
}

std::string request_context::peer_address() const { return channel_->peer_address(); }
asio::io_context& request_context::reactor() const noexcept { return channel_->reactor(); }

bool cancellable_sleep::await_ready() const noexcept {
  return duration_ <= std::chrono::steady_clock::duration::zero() || ctx_.cancelled();
}

void cancellable_sleep::await_suspend(std::coroutine_handle<> h) {
  // The timer and the cancellation signal belong to the connection's reactor, where cancel
  // frames are handled: a handler that moved to another thread arms its timer there.
  if (current_reactor() == &ctx_.reactor()) {
    arm(h);
  } else {
    asio::post(ctx_.reactor(), [this, h] { arm(h); });
  }
}

void cancellable_sleep::arm(std::coroutine_handle<> h) {
  if (ctx_.cancelled()) {  // cancelled between await_ready and now
    asio::post(ctx_.reactor(), [h] { h.resume(); });
    return;
  }
  detail::timer_access::emplace(timer_, ctx_.reactor(), duration_)
      .async_wait(asio::bind_cancellation_slot(ctx_.cancellation_slot(),
                                               [this, h](const std::error_code& ec) {
                                                 // asio leaves the op's cancellation handler in the
                                                 // slot after completion, and it points at our
                                                 // timer: a later cancel() would reach a destroyed
                                                 // timer.
                                                 ctx_.cancellation_slot().clear();
                                                 slept_ = !ec;
                                                 h.resume();
                                               }));
}

}  // namespace corvid
