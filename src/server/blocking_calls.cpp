// The server's side of blocking handlers: the worker pool's start and the submission of
// blocking calls (docs/architecture.md, "Blocking handlers and method limits").
#include <stdexcept>
#include <system_error>

#include "server_core.hpp"

namespace corvid::detail {

rpc_error server_core::start_workers() {
  const bool any_blocking = std::any_of(handlers_.begin(), handlers_.end(),
                                        [](const auto& h) { return h.second.blocking; });
  if (!any_blocking) return {};  // no threads for a server that would never use them
  try {
    workers_ = std::make_unique<worker_pool>(config.worker_threads, config.worker_queue_length,
                                             config.worker_queue_bytes);
  } catch (const std::system_error& e) {
    return {rpc_errc::invalid_argument, "cannot start " + std::to_string(config.worker_threads) +
                                            " worker threads for blocking handlers: " + e.what()};
  }
  return {};
}

bool server_core::submit_blocking(blocking_job& job, blocking_lane& lane, reply_sink& sink,
                                  std::uint64_t request_id, bool light) {
  if (workers_ == nullptr) {  // not reachable: blocking handlers start the pool
    sink.reply_error(request_id, rpc_errc::server_busy, "no worker threads for blocking handlers");
    return false;
  }
  const worker_pool::refusal r = workers_->submit(job, lane, light);
  if (r == worker_pool::refusal::none) [[likely]]
    return true;
  sink.reply_error(request_id, rpc_errc::server_busy, workers_->describe(r));
  return false;
}

}  // namespace corvid::detail
