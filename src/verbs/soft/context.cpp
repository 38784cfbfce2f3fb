#include "context.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <unistd.h>

namespace corvid::verbs::soft {
namespace {

constexpr std::uint8_t gid_magic[4] = {'c', 'o', 'r', 'v'};

// CORVID_SOFTVERBS_MAX_INLINE overrides the inline limit, e.g. 0 to exercise a transport's
// registered-memory path for small messages.
std::uint32_t max_inline_from_env() {
  const char* v = std::getenv("CORVID_SOFTVERBS_MAX_INLINE");
  if (v == nullptr || *v == '\0') return 256;
  return static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
}

// CORVID_SOFTVERBS_MAX_PARKED: bytes a queue pair may park (context::max_parked_bytes).
std::size_t max_parked_from_env() {
  const char* v = std::getenv("CORVID_SOFTVERBS_MAX_PARKED");
  if (v == nullptr || *v == '\0') return std::size_t{64} << 20;
  return static_cast<std::size_t>(std::strtoull(v, nullptr, 10));
}

}  // namespace

std::uint32_t gid_pid(const gid_t& gid) noexcept {
  std::uint32_t pid = 0;
  std::memcpy(&pid, gid.data() + 4, 4);
  return pid;
}

bool is_soft_gid(const gid_t& gid) noexcept {
  return std::memcmp(gid.data(), gid_magic, sizeof gid_magic) == 0;
}

std::string listen_name(const gid_t& gid, std::uint32_t qpn, std::uint32_t psn) {
  std::string name(1, '\0');
  name += "corvid-softverbs/";
  char hex[3];
  for (std::uint8_t b : gid) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    name += hex;
  }
  name += "/" + std::to_string(qpn) + "." + std::to_string(psn);
  return name;
}

context::context() {
  std::random_device rd;
  attr_.provider = "soft";
  attr_.name = "softverbs0";
  attr_.max_qp_wr = 16384;
  attr_.max_sge = 32;
  attr_.max_cqe = 1 << 20;
  attr_.max_inline_data = max_inline_from_env();
  attr_.max_mr_size = std::uint64_t{1} << 40;
  attr_.mtu = 4096;
  attr_.lid = 0;
  std::memcpy(attr_.gid.data(), gid_magic, sizeof gid_magic);
  const auto pid = static_cast<std::uint32_t>(::getpid());
  std::memcpy(attr_.gid.data() + 4, &pid, 4);
  for (std::size_t i = 8; i < 16; i += 4) {
    const std::uint32_t r = rd();
    std::memcpy(attr_.gid.data() + i, &r, 4);
  }
  // Keys start at a random point so stale values from another device or run do not match
  // by accident.
  next_key_ = (rd() & 0xffffff) | 0x1000000;
  max_parked_ = max_parked_from_env();
}

std::uint32_t context::random_qpn() {
  std::random_device rd;
  std::uint32_t qpn = 0;
  while (qpn == 0) qpn = rd() & 0xffffff;
  return qpn;
}

std::uint32_t context::random_psn() {
  std::random_device rd;
  return rd() & 0xffffff;
}

std::uint32_t context::add_region(const region& r) {
  std::lock_guard lock(mutex_);
  std::uint32_t key;
  do {
    key = next_key_++;
  } while (key == 0 || regions_.contains(key));
  regions_.emplace(key, r);
  return key;
}

void context::remove_region(std::uint32_t lkey) {
  std::lock_guard lock(mutex_);
  regions_.erase(lkey);
}

wc_status context::check(std::uint32_t lkey, std::uint64_t addr, std::uint64_t len,
                         std::uint32_t access) const {
  std::lock_guard lock(mutex_);
  const auto it = regions_.find(lkey);
  if (it == regions_.end()) return wc_status::loc_prot_err;
  const region& r = it->second;
  if (addr < r.addr || addr - r.addr > r.length || len > r.length - (addr - r.addr)) {
    return wc_status::loc_prot_err;
  }
  if ((r.access & access) != access) return wc_status::loc_prot_err;  // as hardware reports it
  return wc_status::success;
}

}  // namespace corvid::verbs::soft
