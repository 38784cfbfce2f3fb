#pragma once
// The call budget of a server connection: what a call may hold, asked before it holds it.
// Reactor thread.
#include <cstddef>
#include <cstdint>

namespace corvid {
class request_context;
}

namespace corvid::detail {

struct blocking_job;

// What a call may hold: the admission of its memory and of its place among the connection's
// calls and in the worker queue (the connection's connection_admission answers).
class call_budget {
 public:
  virtual ~call_budget() = default;

  // Memory for the request being dispatched: the decoder's allocations and a coroutine call's
  // state and request copy are taken from this allowance (charge_call) before they are made.
  // Returns the allowance after asking the server's trackers for up to `want` bytes in all
  // (0: just tell).
  virtual std::size_t call_allowance(std::size_t want) noexcept = 0;
  virtual void charge_call(std::size_t bytes) noexcept = 0;

  // Coroutine handlers in flight; stop() waits for them before closing. The connection keeps
  // their contexts, to cancel one when a cancel frame names it (or all when it closes).
  virtual void call_started(request_context& ctx) noexcept = 0;
  virtual void call_finished(request_context& ctx) noexcept = 0;

  // A blocking call, started (call_started): queued for a worker thread. False = refused
  // (the worker queue is full): the connection has queued a server_busy reply to
  // `request_id`, and the caller ends the call (call_finished). A budget without workers
  // refuses all.
  virtual bool submit_blocking(blocking_job& job, std::uint64_t request_id) = 0;
};

}  // namespace corvid::detail
