#pragma once
// What an RDMA connection did, counted per server or client (transport_stats shows them).
#include <atomic>
#include <cstdint>

namespace corvid::rdma {

struct rdma_counters {
  std::atomic<std::uint64_t> sends{0};         // SENDs posted
  std::atomic<std::uint64_t> inline_sends{0};  // ... of them inline
  std::atomic<std::uint64_t> receives{0};      // receive completions
  std::atomic<std::uint64_t> errors{0};        // failed work requests (RNR, retries, flush)
  std::atomic<std::uint64_t> rnr_errors{0};    // ... of them RNR retries exhausted

  void on_rdma_send(bool inlined) noexcept {
    bump(sends);
    if (inlined) bump(inline_sends);
  }
  void on_rdma_receive() noexcept { bump(receives); }
  void on_rdma_error(bool rnr) noexcept {
    bump(errors);
    if (rnr) bump(rnr_errors);
  }

 private:
  static void bump(std::atomic<std::uint64_t>& c) noexcept {
    c.fetch_add(1, std::memory_order_relaxed);
  }
};

}  // namespace corvid::rdma
