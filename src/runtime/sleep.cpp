#include "corvid/runtime/sleep.hpp"

#include "corvid/runtime/io_pool.hpp"
#include "corvid/trace/trace_scope.hpp"

#include "timer_access.hpp"

namespace corvid {

void sleep_awaiter::await_suspend(std::coroutine_handle<> h) {
  // Off a reactor (e.g. a call whose reply arrived before its caller suspended leaves the
  // caller on its own thread), the timer runs on the default pool, where it resumes.
  asio::io_context* ctx = current_reactor();
  if (ctx == nullptr) ctx = &io_pool::default_pool().next();
  detail::timer_access::emplace(timer_, *ctx, duration_)
      .async_wait([h, trace = detail::capture_trace()](const std::error_code&) {
        detail::resume_traced(h, trace);
      });
}

}  // namespace corvid
