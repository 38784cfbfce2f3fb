#include "corvid/client/client_metrics.hpp"

#include "../metrics/client_registry.hpp"

namespace corvid {

client_metrics::client_metrics() : registry_(std::make_unique<metrics::client_registry>()) {}

client_metrics::~client_metrics() = default;

std::string client_metrics::prometheus_text() const {
  return metrics::prometheus_text(registry_->snapshot());
}

}  // namespace corvid
