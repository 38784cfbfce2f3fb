#include "corvid/memory/memory_limit.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

namespace corvid {
namespace {

std::size_t ram_from_sysconf() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::size_t{4} << 30;  // unknown: assume 4 GiB
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
}

// cgroup v2 limit of this process's group ("max" or absent: none).
std::size_t cgroup_limit() noexcept {
  try {
    std::ifstream f("/sys/fs/cgroup/memory.max");
    std::string value;
    if (!(f >> value) || value == "max") return unlimited_memory;
    return static_cast<std::size_t>(std::stoull(value));
  } catch (...) {
    return unlimited_memory;
  }
}

}  // namespace

std::size_t physical_memory() noexcept {
  static const std::size_t ram = std::min(ram_from_sysconf(), cgroup_limit());
  return ram;
}

std::size_t memory_limit::resolve(std::size_t whole) const noexcept {
  if (share_ > 0) {
    if (whole == unlimited_memory) return unlimited_memory;
    return static_cast<std::size_t>(static_cast<double>(whole) * std::min(share_, 1.0));
  }
  return bytes_;
}

}  // namespace corvid
