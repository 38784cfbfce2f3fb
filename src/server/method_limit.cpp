// set_method_limit (docs/architecture.md, "Blocking handlers and method limits"); the
// dispatcher holds a place in the limit for each call.
#include "method_limit.hpp"

#include <stdexcept>

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

}  // namespace corvid::detail
