#pragma once
// Counters of what crossed a connection's socket. The benchmark reports RPCs per write
// syscall from these (seed 002: one reply per packet wastes syscalls and packets).
#include <atomic>
#include <chrono>
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

namespace detail {

// Updated by reactors once per read or write (not per frame), read from any thread.
struct stats_counters {
  std::atomic<std::uint64_t> frames_sent{0}, write_syscalls{0}, bytes_sent{0};
  std::atomic<std::uint64_t> frames_received{0}, read_syscalls{0}, bytes_received{0};
  std::atomic<std::uint64_t> calls_cancelled{0}, pings_sent{0}, dead_peer_closes{0};
  std::atomic<std::uint64_t> calls_waited{0};
  std::atomic<std::uint64_t> rdma_sends{0}, rdma_inline_sends{0}, rdma_receives{0};
  std::atomic<std::uint64_t> rdma_errors{0}, rdma_rnr_errors{0};

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
    return {get(frames_sent),     get(write_syscalls), get(bytes_sent),
            get(frames_received), get(read_syscalls),  get(bytes_received),
            get(calls_cancelled), get(pings_sent),     get(dead_peer_closes),
            get(calls_waited),    get(rdma_sends),     get(rdma_inline_sends),
            get(rdma_receives),   get(rdma_errors),    get(rdma_rnr_errors)};
  }
};

// asio::transfer_all caps each write_some at 64 KiB; this condition lets a gather write hand
// the kernel everything at once, and counts the write_some calls (one syscall each).
struct counting_transfer_all {
  std::uint64_t* writes;
  // Optional: when the peer last proved alive by draining our send buffer. A write_some
  // after a partial one only succeeds once the peer has acknowledged bytes, while a small
  // write succeeds into the kernel buffer even when the peer is gone.
  std::chrono::steady_clock::time_point* progress = nullptr;
  // Optional: when the write last moved bytes into a full send buffer (a write stalled by a
  // peer that does not read shows no such moves).
  std::chrono::steady_clock::time_point* moved = nullptr;
  // asio calls this before the first write_some and after each one that leaves bytes
  // unsent, so on success the number of calls equals the number of write_some calls.
  std::size_t operator()(const std::error_code& ec, std::size_t) const noexcept {
    ++*writes;
    if (*writes >= 2 && (moved != nullptr || (progress != nullptr && *writes >= 3))) {
      const auto now = std::chrono::steady_clock::now();
      if (moved != nullptr) *moved = now;
      if (progress != nullptr && *writes >= 3) *progress = now;
    }
    return ec ? 0 : static_cast<std::size_t>(-1) / 2;
  }
};

}  // namespace detail
}  // namespace corvid
