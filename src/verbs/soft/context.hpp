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
// rendezvous space: queue pair n listens on the abstract Unix socket listen_name(gid, n).
using gid_t = std::array<std::uint8_t, 16>;
bool is_soft_gid(const gid_t& gid) noexcept;
std::string listen_name(const gid_t& gid, std::uint32_t qpn);  // abstract: starts with '\0'

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

  std::uint32_t next_qpn() noexcept { return next_qpn_.fetch_add(1) & 0xffffff; }

  // RNR events of every queue pair on the device (device::rnr_naks).
  void count_rnr_nak() noexcept { rnr_naks_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t rnr_naks() const noexcept { return rnr_naks_.load(std::memory_order_relaxed); }

 private:
  device_attr attr_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uint32_t, region> regions_;
  std::uint32_t next_key_;
  std::atomic<std::uint32_t> next_qpn_;
  std::atomic<std::uint64_t> rnr_naks_{0};
};

}  // namespace corvid::verbs::soft
