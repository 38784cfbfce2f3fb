#pragma once
// The trace context that client calls made on this thread carry (when their call_options
// name none). corvid sets it around the parts of a traced call's handler it runs (its start,
// and its resumption after a corvid client call, sleep or connect it awaited); a trace_scope
// sets it for a block of the caller's own code.
#include <coroutine>
#include <optional>

#include "corvid/trace/trace_context.hpp"

namespace corvid {

namespace detail {
inline constinit thread_local const trace_context* ambient_trace = nullptr;
}

// The context in scope on this thread, or null.
inline const trace_context* current_trace() noexcept { return detail::ambient_trace; }

// Makes `*t` the current trace context until the scope ends (scopes nest); null changes
// nothing. `*t` must outlive the scope.
class trace_scope {
 public:
  explicit trace_scope(const trace_context* t) noexcept : saved_(detail::ambient_trace), set_(t) {
    if (t != nullptr) detail::ambient_trace = t;
  }
  explicit trace_scope(const trace_context& t) noexcept : trace_scope(&t) {}
  explicit trace_scope(const trace_context&&) = delete;  // a temporary would dangle
  ~trace_scope() {
    if (set_ != nullptr) detail::ambient_trace = saved_;
  }
  trace_scope(const trace_scope&) = delete;
  trace_scope& operator=(const trace_scope&) = delete;

 private:
  const trace_context* saved_;
  const trace_context* set_;
};

namespace detail {

// What a corvid awaitable keeps of the context its awaiter suspended in, to restore it when
// it resumes the awaiter (whatever thread or handler that happens on).
inline std::optional<trace_context> capture_trace() noexcept {
  if (ambient_trace == nullptr) return std::nullopt;
  return *ambient_trace;
}
// Resumes `h` with `t` in scope. `t` is a copy: the resumed coroutine may free the awaitable
// that kept it.
inline void resume_traced(std::coroutine_handle<> h, std::optional<trace_context> t) {
  trace_scope scope(t ? &*t : nullptr);
  h.resume();
}

}  // namespace detail

}  // namespace corvid
