#include "corvid/server/request_context.hpp"

#include "corvid/detail/reply_sink.hpp"
#include "corvid/detail/stream_link.hpp"
#include "corvid/runtime/io_pool.hpp"
#include "corvid/trace/trace_scope.hpp"

#include "../runtime/asio_all.hpp"
#include "../runtime/timer_access.hpp"

namespace corvid {

void request_context::cancel() noexcept {
  cancelled_.store(true, std::memory_order_release);
  signal_.emit(asio::cancellation_type::all);
  if (stream_ != nullptr) stream_->on_cancel();
}

void request_context::start_span(const trace_context& caller) noexcept {
  span_.emplace(detail::traced_call{caller.child(), caller.span_id,
                                    std::chrono::system_clock::now(),
                                    std::chrono::steady_clock::now()});
}

void request_context::metadata_deleter::operator()(corvid::metadata* md) const noexcept {
  delete md;
}

std::string request_context::peer_address() const { return sink_->peer_address(); }
const peer_identity& request_context::identity() const noexcept { return sink_->identity(); }

namespace detail {
// A sink of a connection that proves nothing (and test sinks): no identity.
const peer_identity& reply_sink::identity() const noexcept {
  static const peer_identity none;
  return none;
}
}  // namespace detail
asio::io_context& request_context::reactor() const noexcept { return sink_->reactor(); }

bool cancellable_sleep::await_ready() const noexcept {
  return duration_ <= std::chrono::steady_clock::duration::zero() || ctx_.cancelled();
}

void cancellable_sleep::await_suspend(std::coroutine_handle<> h) {
  // The timer and the cancellation signal belong to the connection's reactor, where cancel
  // frames are handled: a handler that moved to another thread arms its timer there.
  trace_ = detail::capture_trace();
  if (current_reactor() == &ctx_.reactor()) {
    arm(h);
  } else {
    asio::post(ctx_.reactor(), [this, h] { arm(h); });
  }
}

void cancellable_sleep::arm(std::coroutine_handle<> h) {
  if (ctx_.cancelled()) {  // cancelled between await_ready and now
    asio::post(ctx_.reactor(), [h, trace = trace_] { detail::resume_traced(h, trace); });
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
                                                 detail::resume_traced(h, trace_);
                                               }));
}

}  // namespace corvid
