#pragma once
// The CPUs this process may use: those its affinity mask allows (sched_getaffinity), capped by
// the CPU quota of its cgroup (v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`; the
// lowest along its cgroup's path up to the hierarchy's mount), read the way Go's runtime and
// the JVM size themselves in containers. server_config's io_threads, worker_threads and
// adaptive_poll defaults, and io_pool::default_pool(), follow it.
#include <chrono>
#include <cstddef>

#include "corvid/export.hpp"

namespace corvid {

struct CORVID_API cpu_budget {
  std::size_t affinity_cpus = 1;  // CPUs the affinity mask allows (at least 1)
  double quota_cpus = 0;          // the cgroup quota in CPUs (50 ms per 100 ms = 0.5); 0 = none

  // What the process may burn per second of wall time, in CPUs: min(affinity, quota).
  double cpus() const noexcept;
  // Threads to run for it: the budget rounded up (a quota of 1.5 CPUs gets 2), at least 1.
  std::size_t threads() const noexcept;
  // The default adaptive polling budget for threads() reactors: io_pool's default (100 us)
  // when each reactor has a whole CPU of quota, that times its share when less (half a CPU:
  // 50 us). A polling reactor keeps its CPU busy between events; under a quota that time is
  // taken from the calls, and once the quota is spent the kernel stops the whole process
  // until the next period.
  std::chrono::microseconds adaptive_poll() const noexcept;
};

// Reads the budget now (sched_getaffinity and a few files of /proc and /sys/fs/cgroup; not
// cached, so a process moved to another cgroup sees its new quota). What cannot be read
// counts as no quota.
CORVID_API cpu_budget usable_cpus();

}  // namespace corvid
