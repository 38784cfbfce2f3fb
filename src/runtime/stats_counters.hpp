#pragma once
// The counters behind transport_stats: one set per client connection and one per server.
#include <atomic>
#include <cstdint>

#include "corvid/runtime/transport_stats.hpp"

namespace corvid::detail {

// Updated by reactors once per read or write (not per frame), read from any thread.
struct stats_counters {
  std::atomic<std::uint64_t> frames_sent{0}, write_syscalls{0}, bytes_sent{0};
  std::atomic<std::uint64_t> frames_received{0}, read_syscalls{0}, bytes_received{0};
  std::atomic<std::uint64_t> calls_cancelled{0}, pings_sent{0}, dead_peer_closes{0};
  std::atomic<std::uint64_t> calls_waited{0};
  std::atomic<std::uint64_t> rdma_sends{0}, rdma_inline_sends{0}, rdma_receives{0};
  std::atomic<std::uint64_t> rdma_errors{0}, rdma_rnr_errors{0};
  std::atomic<std::uint64_t> admission_pauses{0}, pre_auth_refusals{0};

  static void add(std::atomic<std::uint64_t>& c, std::uint64_t n) noexcept {
    c.fetch_add(n, std::memory_order_relaxed);
  }
  void on_write(std::uint64_t frames, std::uint64_t syscalls, std::uint64_t bytes) noexcept {
    add(frames_sent, frames);
    add(write_syscalls, syscalls);
    add(bytes_sent, bytes);
  }
  void on_read(std::uint64_t bytes) noexcept {
    add(read_syscalls, 1);
    add(bytes_received, bytes);
  }
  void on_frames_received(std::uint64_t frames) noexcept { add(frames_received, frames); }
  void on_cancelled() noexcept { add(calls_cancelled, 1); }
  void on_ping() noexcept { add(pings_sent, 1); }
  void on_dead_peer() noexcept { add(dead_peer_closes, 1); }
  void on_waited() noexcept { add(calls_waited, 1); }
  void on_admission_pause() noexcept { add(admission_pauses, 1); }
  void on_pre_auth_refusal() noexcept { add(pre_auth_refusals, 1); }
  void on_rdma_send(bool inlined) noexcept {
    add(rdma_sends, 1);
    if (inlined) add(rdma_inline_sends, 1);
  }
  void on_rdma_receive() noexcept { add(rdma_receives, 1); }
  void on_rdma_error(bool rnr) noexcept {
    add(rdma_errors, 1);
    if (rnr) add(rdma_rnr_errors, 1);
  }
  transport_stats snapshot() const noexcept {
    auto get = [](const std::atomic<std::uint64_t>& c) {
      return c.load(std::memory_order_relaxed);
    };
    return {get(frames_sent),      get(write_syscalls),   get(bytes_sent),
            get(frames_received),  get(read_syscalls),    get(bytes_received),
            get(calls_cancelled),  get(pings_sent),       get(dead_peer_closes),
            get(calls_waited),     get(rdma_sends),       get(rdma_inline_sends),
            get(rdma_receives),    get(rdma_errors),      get(rdma_rnr_errors),
            get(admission_pauses), get(pre_auth_refusals)};
  }
};

}  // namespace corvid::detail
