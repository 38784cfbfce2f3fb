#pragma once
// When a load_balancer sends a call again after it failed, and how often a fleet lets it.
//
//   corvid::lb_config cfg;
//   cfg.retry.max_attempts = 3;
//   cfg.retry.idempotent<&get_user, &list_users>();  // only these are ever repeated
//
// A call of an idempotent method that fails with server_busy, connection_closed or
// connect_failed is sent again, on another endpoint where one exists, after an exponential
// back-off with full jitter, always within its deadline. Other methods keep the one rule
// that needs no declaration: a request that provably never left the client is sent once
// more elsewhere. The budget is gRPC's retry throttling: a token bucket per balancer, so
// retries stop while most calls fail and a struggling fleet is not hit by a retry storm.
#include <chrono>
#include <cstdint>
#include <vector>

#include "corvid/protocol/function_id.hpp"

namespace corvid {

struct retry_budget {
  // Each failed attempt (a retryable error) takes a token, each success gives back
  // `token_ratio`; retries are sent only while more than half of `max_tokens` are left.
  // 0 = no budget: every allowed retry is sent.
  double max_tokens = 10;
  double token_ratio = 0.1;
};

struct retry_policy {
  // Attempts per call, the first included; 1 = no retries beyond the never-sent rule.
  unsigned max_attempts = 1;
  std::chrono::milliseconds initial_backoff{10};
  std::chrono::milliseconds max_backoff{1000};
  double backoff_multiplier = 2.0;
  retry_budget budget;
  // The methods that may run more than once (function ids, as the server registers them).
  std::vector<std::uint32_t> idempotent_methods;

  template <auto... F>
  retry_policy& idempotent() {
    (idempotent_methods.push_back(protocol::function_id_v<F>), ...);
    return *this;
  }
  bool is_idempotent(std::uint32_t method) const noexcept {
    for (const auto m : idempotent_methods) {
      if (m == method) return true;
    }
    return false;
  }
};

}  // namespace corvid
