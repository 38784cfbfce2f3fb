// The server's side of blocking handlers and method limits: the worker pool's start, the
// submission of blocking calls, and set_method_limit (docs/architecture.md, "Blocking
// handlers").
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

bool server_core::submit_blocking(blocking_job& job, reply_channel& ch, std::uint64_t request_id) {
  if (workers_ == nullptr) {  // not reachable: blocking handlers start the pool
    ch.reply_error(request_id, rpc_errc::server_busy, "no worker threads for blocking handlers");
    return false;
  }
  const worker_pool::refusal r = workers_->submit(job);
  if (r == worker_pool::refusal::none) [[likely]]
    return true;
  ch.reply_error(request_id, rpc_errc::server_busy, workers_->describe(r));
  return false;
}

void server_core::set_method_limit(std::uint32_t id, std::string_view name,
                                   std::size_t max_concurrent) {
  std::lock_guard lk(mutex_);
  if (started_) throw std::logic_error("corvid: set_method_limit after start()");
  if (max_concurrent == 0) {
    throw std::logic_error("corvid: set_method_limit<" + std::string(name) +
                           ">(0) would refuse every call");
  }
  auto it = handlers_.find(id);
  if (it == handlers_.end() || it->second.name != name) {
    throw std::logic_error("corvid: set_method_limit<" + std::string(name) +
                           ">: register the handler first");
  }
  it->second.limit = std::make_unique<method_limit>(name, max_concurrent);
}

}  // namespace corvid::detail
