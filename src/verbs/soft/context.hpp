#pragma once
// State shared by everything opened from one softverbs device: its attributes and address
// (gid), and the table of registered memory regions that every post checks sges against.
// Thread-safe: regions are registered on any thread while reactors post and place data.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../verbs.hpp"

namespace corvid::verbs::soft {

// The gid of a softverbs device: "corv" + pid + a random nonce. It names the device's
// rendezvous space: a queue pair listens on the abstract Unix socket
// listen_name(gid, qp_num, psn). Its qp_num and psn are random (48 bits between them), so the
// name is known only to whoever was told the endpoint_info: the gid alone, which every
// handshake reply reveals, does not lead to the next queue pair's socket.
using gid_t = std::array<std::uint8_t, 16>;
bool is_soft_gid(const gid_t& gid) noexcept;
// The process id a softverbs gid names (its creator's, as getpid() saw it).
std::uint32_t gid_pid(const gid_t& gid) noexcept;
// Abstract: starts with '\0'.
std::string listen_name(const gid_t& gid, std::uint32_t qpn, std::uint32_t psn);

struct region {
  std::uint64_t addr = 0;
  std::uint64_t length = 0;
  std::uint32_t access = 0;
};

class context {
 public:
  context();
  const device_attr& attr() const noexcept { return attr_; }

  std::uint32_t add_region(const region& r);
  void remove_region(std::uint32_t lkey);
  // Whether [addr, addr + len) lies inside the region `lkey` and the region grants `access`.
  wc_status check(std::uint32_t lkey, std::uint64_t addr, std::uint64_t len,
                  std::uint32_t access) const;

  // A random queue pair number (24 bits, never 0): sequential ones would let a local process
  // guess the next queue pair's rendezvous socket and call it before the real peer does.
  // Both come from std::random_device (the kernel's or the CPU's generator), not from a
  // seeded engine whose later outputs the numbers seen in handshakes would give away.
  static std::uint32_t random_qpn();
  static std::uint32_t random_psn();
  // The most bytes of SENDs a queue pair parks while it has no receive posted
  // (CORVID_SOFTVERBS_MAX_PARKED, default 64 MiB). A peer that sends past it fails the queue
  // pair as if its RNR retries ran out: hardware holds nothing for a receiver that is not
  // ready, and without a bound a peer that never waits for acks could fill our memory.
  std::size_t max_parked_bytes() const noexcept { return max_parked_; }

  // RNR events of every queue pair on the device (device::rnr_naks).
  void count_rnr_nak() noexcept { rnr_naks_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t rnr_naks() const noexcept { return rnr_naks_.load(std::memory_order_relaxed); }

 private:
  device_attr attr_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uint32_t, region> regions_;
  std::uint32_t next_key_;
  std::size_t max_parked_;
  std::atomic<std::uint64_t> rnr_naks_{0};
};

}  // namespace corvid::verbs::soft
