#pragma once
// A blocking call as the worker pool sees it (rpc_server::register_blocking_handler): an
// intrusive queue node, so queueing a call allocates nothing beyond the call itself.
#include <chrono>
#include <cstddef>

namespace corvid::detail {

struct blocking_job {
  blocking_job* next = nullptr;
  // What the call holds while it waits (request copy, decoded arguments, call state): counted
  // against server_config::worker_queue_bytes; the same bytes are charged to the connection's
  // in_flight tracker from before they were allocated until the call ends.
  std::size_t bytes = 0;
  std::chrono::steady_clock::time_point queued_at{};  // set by the pool
  // Runs on a worker thread: runs the handler (unless the call was cancelled or its deadline
  // passed while it waited), then posts the reply to the connection's reactor. The job is
  // not touched by the pool after this is called.
  void (*execute)(blocking_job*) noexcept = nullptr;
};

}  // namespace corvid::detail
