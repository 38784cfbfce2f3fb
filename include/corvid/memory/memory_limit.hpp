#pragma once
// A memory limit given in bytes or as a share of the machine's RAM, resolved to bytes when a
// tracker is built from it.
#include <cstddef>
#include <limits>

#include "corvid/export.hpp"

namespace corvid {

inline constexpr std::size_t unlimited_memory = std::numeric_limits<std::size_t>::max();

// Physical memory available to this process: /proc/meminfo MemTotal (sysconf), lowered to
// the cgroup v2 memory.max when a container sets one. Read once, then cached.
CORVID_API std::size_t physical_memory() noexcept;

class CORVID_API memory_limit {
 public:
  constexpr memory_limit() = default;  // unlimited
  static constexpr memory_limit none() noexcept { return {}; }
  static constexpr memory_limit bytes(std::size_t n) noexcept {
    memory_limit l;
    l.bytes_ = n;
    return l;
  }
  // `share` of physical_memory(), e.g. 0.25 for a quarter of RAM.
  static constexpr memory_limit share_of_ram(double share) noexcept {
    memory_limit l;
    l.share_ = share;
    return l;
  }
  // `share` of another limit in bytes (e.g. a category's part of the server limit).
  std::size_t resolve(std::size_t whole = physical_memory()) const noexcept;
  constexpr bool is_unlimited() const noexcept { return share_ <= 0 && bytes_ == unlimited_memory; }

 private:
  std::size_t bytes_ = unlimited_memory;
  double share_ = 0;  // > 0: a share of RAM (or of `whole`)
};

}  // namespace corvid
