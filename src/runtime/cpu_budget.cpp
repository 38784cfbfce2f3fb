#include "corvid/runtime/cpu_budget.hpp"

#include <algorithm>
#include <cmath>
#include <sched.h>
#include <thread>

#include "corvid/runtime/io_pool.hpp"

#include "cgroup_cpu_quota.hpp"

namespace corvid {
namespace {

std::size_t affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<std::size_t>(n);
  }
  // More CPUs than a cpu_set_t holds (1024), or no answer: the machine's count.
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

double cpu_budget::cpus() const noexcept {
  const double affinity = static_cast<double>(std::max<std::size_t>(1, affinity_cpus));
  return quota_cpus > 0 ? std::min(affinity, quota_cpus) : affinity;
}

std::size_t cpu_budget::threads() const noexcept {
  // A small tolerance, so that 2.0000001 CPUs from a period that does not divide evenly is 2.
  const double up = std::ceil(cpus() - 1e-6);
  return std::max<std::size_t>(1, static_cast<std::size_t>(up));
}

std::chrono::microseconds cpu_budget::adaptive_poll() const noexcept {
  const auto full = io_pool::default_adaptive_poll;
  const double share = quota_cpus > 0 ? quota_cpus / static_cast<double>(threads()) : 1.0;
  if (share >= 1.0 - 1e-6) return full;
  // Less than a CPU per reactor: the budget shrinks with the share, so the longest spin
  // after an event (the CPU a reactor burns for a call that never comes) shrinks with it.
  return std::chrono::microseconds(
      static_cast<std::chrono::microseconds::rep>(static_cast<double>(full.count()) * share));
}

cpu_budget usable_cpus() {
  cpu_budget b;
  b.affinity_cpus = affinity_cpus();
  b.quota_cpus = detail::cgroup_cpu_quota("/");
  return b;
}

}  // namespace corvid
