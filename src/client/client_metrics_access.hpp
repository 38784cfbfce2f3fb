#pragma once
// How the library reaches a corvid::client_metrics' counters (its public header shows none).
#include <memory>

#include "corvid/client/client_metrics.hpp"

#include "../metrics/client_registry.hpp"

namespace corvid::detail {

struct client_metrics_access {
  // Null when metrics are off.
  static metrics::client_registry* registry(const std::shared_ptr<client_metrics>& m) noexcept {
    return m ? m->registry_.get() : nullptr;
  }
};

}  // namespace corvid::detail
