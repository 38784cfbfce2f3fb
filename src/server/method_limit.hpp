#pragma once
// rpc_server::set_method_limit: at most `max` calls of one method running at once across all
// connections (plain calls while they run, coroutine and blocking calls from their start,
// queued included, to their end); the call past it is answered server_busy at once. One
// relaxed atomic add per call of a limited method; a method without a limit has no
// method_limit and pays one null check.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace corvid::detail {

class method_limit {
 public:
  method_limit(std::string_view method, std::size_t max) : method_(method), max_(max) {}

  bool try_acquire() noexcept {
    if (running_.fetch_add(1, std::memory_order_relaxed) < max_) return true;
    running_.fetch_sub(1, std::memory_order_relaxed);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  void release() noexcept { running_.fetch_sub(1, std::memory_order_relaxed); }

  std::size_t max() const noexcept { return max_; }
  // Calls of the method running now (a refused attempt may count for an instant).
  std::size_t running() const noexcept { return running_.load(std::memory_order_relaxed); }
  // Calls refused because the limit was reached, since start: for metrics.
  std::uint64_t refused() const noexcept { return refused_.load(std::memory_order_relaxed); }
  // The server_busy message of a refused call.
  std::string refusal() const {
    return std::string(method_) + " is at its limit of " + std::to_string(max_) +
           " concurrent calls (rpc_server::set_method_limit)";
  }

 private:
  const std::string method_;
  const std::size_t max_;
  // Hot: touched by every reactor calling this method.
  alignas(64) std::atomic<std::size_t> running_{0};
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace corvid::detail
