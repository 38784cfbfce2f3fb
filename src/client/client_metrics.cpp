#include "corvid/client/client_metrics.hpp"

#include <algorithm>

#include "../metrics/client_registry.hpp"

namespace corvid {

client_metrics::client_metrics(std::chrono::milliseconds endpoint_linger,
                               std::size_t max_endpoint_series)
    : registry_(std::make_unique<metrics::client_registry>(
          endpoint_linger, std::max<std::size_t>(max_endpoint_series, 1))) {}

client_metrics::~client_metrics() = default;

std::string client_metrics::prometheus_text() const {
  return metrics::prometheus_text(registry_->snapshot());
}

}  // namespace corvid
