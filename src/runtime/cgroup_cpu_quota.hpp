#pragma once
// The cgroup side of usable_cpus(): where the process's cgroup is (/proc/self/cgroup and
// /proc/self/mountinfo) and its CPU quota. Every path is read under `root` ("/" in a process;
// a fixture tree in tests).
#include <filesystem>
#include <string_view>

namespace corvid::detail {

// cgroup v2 `cpu.max` ("max 100000", "50000 100000"): the quota in CPUs, 0 = none or malformed.
double parse_cpu_max(std::string_view text);
// cgroup v1 `cpu.cfs_quota_us` (-1 = none) over `cpu.cfs_period_us`: CPUs, 0 = none or malformed.
double parse_cfs_quota(std::string_view quota_us, std::string_view period_us);

// The lowest CPU quota (in CPUs) of the process's cgroups, v1 `cpu` controller and v2, from its
// own cgroup up to the top of the mounted hierarchy; 0 = no quota (or nothing readable).
double cgroup_cpu_quota(const std::filesystem::path& root);

}  // namespace corvid::detail
