#include "client_recorder.hpp"

#include "client_registry.hpp"

namespace corvid::metrics {

client_recorder::client_recorder(client_registry* registry) : registry_(registry) {
  if (registry_ != nullptr) registry_->attach(this);
}

client_recorder::~client_recorder() {
  if (registry_ != nullptr) registry_->retire(this);
}

client_method_stats* client_recorder::create(std::uint32_t function_id, std::string_view name) {
  return registry_->create(table_, function_id, name);
}

void client_recorder::connected(bool ok) noexcept {
  if (registry_ != nullptr) registry_->connected(ok);
}

}  // namespace corvid::metrics
