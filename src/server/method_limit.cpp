// set_method_limit, and dispatch's side of it (docs/architecture.md, "Blocking handlers and
// method limits").
#include "method_limit.hpp"

#include <stdexcept>
#include <utility>

#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {

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

void server_connection::invoke_limited(const handler_entry& entry, const request_view& req) {
  if (!entry.limit->try_acquire()) {
    reply_error(req.request_id, rpc_errc::server_busy, entry.limit->refusal());
    return;
  }
  call_limit_ = entry.limit.get();
  try {
    invoke(entry, req);
  } catch (...) {
    if (call_limit_ != nullptr) std::exchange(call_limit_, nullptr)->release();
    throw;
  }
  // A call that started (call_started) took the place with it; otherwise it ended here.
  if (call_limit_ != nullptr) std::exchange(call_limit_, nullptr)->release();
}

}  // namespace corvid::detail
