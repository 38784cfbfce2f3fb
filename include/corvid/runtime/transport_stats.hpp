#pragma once
// Counters of what crossed a connection's socket. The benchmark reports RPCs per write
// syscall from these (one reply per write wastes syscalls and packets).
#include <cstdint>

namespace corvid {

struct transport_stats {
  std::uint64_t frames_sent = 0;
  std::uint64_t write_syscalls = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t frames_received = 0;
  std::uint64_t read_syscalls = 0;
  std::uint64_t bytes_received = 0;
  // Cancelled calls: on a client, cancel frames sent (explicit cancel or timeout); on a
  // server, coroutine handlers a cancel frame reached while running.
  std::uint64_t calls_cancelled = 0;
  std::uint64_t pings_sent = 0;        // heartbeats sent
  std::uint64_t dead_peer_closes = 0;  // connections closed by the heartbeat timeout
  // Client: calls that waited for room at a cap (max_pending_calls, max_queued_request_bytes).
  std::uint64_t calls_waited = 0;

  // RDMA connections (init_ibv); zero on TCP. There, write_syscalls counts SENDs posted,
  // so frames_per_write() is frames per SEND (small frames merged while the window is full).
  std::uint64_t rdma_sends = 0;         // SEND work requests posted
  std::uint64_t rdma_inline_sends = 0;  // ... of them inline (no DMA read of the buffer)
  std::uint64_t rdma_receives = 0;      // receive completions
  std::uint64_t rdma_errors = 0;        // failed work requests (RNR or transport retries, ...)
  std::uint64_t rdma_rnr_errors = 0;    // ... of them "receiver not ready" retries exhausted

  // Server admission (docs/reliability.md): times a connection stopped reading because a
  // limit or share held (memory, calls, queued replies, its worker-queue share), and
  // connections closed before authenticating because the pre-authentication places or
  // budget (their own, or their peer address's share) were taken.
  std::uint64_t admission_pauses = 0;
  std::uint64_t pre_auth_refusals = 0;

  double frames_per_write() const noexcept {
    return write_syscalls == 0
               ? 0.0
               : static_cast<double>(frames_sent) / static_cast<double>(write_syscalls);
  }
  double frames_per_read() const noexcept {
    return read_syscalls == 0
               ? 0.0
               : static_cast<double>(frames_received) / static_cast<double>(read_syscalls);
  }
};

}  // namespace corvid
