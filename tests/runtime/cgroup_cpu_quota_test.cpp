// The cgroup side of usable_cpus(), on fixture trees: /proc/self/cgroup and /proc/self/mountinfo
// as hosts and containers write them (cgroup v1, v2, hybrid, cgroup namespaces), and the quota
// files along the cgroup's path.
#include "runtime/cgroup_cpu_quota.hpp"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <unistd.h>

#include <gtest/gtest.h>

namespace corvid::detail {
namespace {

namespace fs = std::filesystem;

// A directory standing in for "/", removed at the end of the test.
class fake_root {
 public:
  fake_root() {
    static std::atomic<int> n{0};
    dir_ = fs::temp_directory_path() /
           ("corvid-cgroup-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::create_directories(dir_);
  }
  ~fake_root() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fake_root(const fake_root&) = delete;
  fake_root& operator=(const fake_root&) = delete;

  void write(const std::string& rel, const std::string& text) const {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

// mountinfo lines of a cgroup v1 host (cpu and cpuacct co-mounted, as Debian and most
// distributions do) and of the v2 hierarchy.
constexpr const char* v1_mounts =
    "25 30 0:22 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs ro,mode=755\n"
    "33 25 0:29 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory\n"
    "35 25 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:16 - cgroup cgroup "
    "rw,cpu,cpuacct\n"
    "36 25 0:32 / /sys/fs/cgroup/cpuset rw,relatime shared:17 - cgroup cgroup rw,cpuset\n";

TEST(ParseCpuMax, QuotaOverPeriodAndNoQuota) {
  EXPECT_DOUBLE_EQ(parse_cpu_max("50000 100000\n"), 0.5);
  EXPECT_DOUBLE_EQ(parse_cpu_max("150000 100000"), 1.5);
  EXPECT_DOUBLE_EQ(parse_cpu_max("max 100000\n"), 0.0) << "no limit";
  EXPECT_DOUBLE_EQ(parse_cpu_max(""), 0.0);
  EXPECT_DOUBLE_EQ(parse_cpu_max("50000"), 0.0) << "no period";
  EXPECT_DOUBLE_EQ(parse_cpu_max("50000 0"), 0.0);
  EXPECT_DOUBLE_EQ(parse_cpu_max("-5 100000"), 0.0);
  EXPECT_DOUBLE_EQ(parse_cpu_max("5x 100000"), 0.0);
}

TEST(ParseCfsQuota, QuotaOverPeriodAndNoQuota) {
  EXPECT_DOUBLE_EQ(parse_cfs_quota("50000\n", "100000\n"), 0.5);
  EXPECT_DOUBLE_EQ(parse_cfs_quota("250000", "100000"), 2.5);
  EXPECT_DOUBLE_EQ(parse_cfs_quota("-1\n", "100000\n"), 0.0) << "-1: no limit";
  EXPECT_DOUBLE_EQ(parse_cfs_quota("", ""), 0.0) << "unreadable";
  EXPECT_DOUBLE_EQ(parse_cfs_quota("50000", "abc"), 0.0);
}

TEST(CgroupCpuQuota, NothingReadableIsNoQuota) {
  fake_root r;
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.0);
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path() / "does-not-exist"), 0.0);
}

TEST(CgroupCpuQuota, V1HostTakesTheLowestQuotaAlongThePath) {
  fake_root r;
  r.write("proc/self/mountinfo", v1_mounts);
  r.write("proc/self/cgroup", "5:cpuset:/\n4:cpu,cpuacct:/kubepods/pod1/app\n3:memory:/kubepods\n");
  const std::string base = "sys/fs/cgroup/cpu,cpuacct/";
  r.write(base + "kubepods/pod1/app/cpu.cfs_quota_us", "-1\n");
  r.write(base + "kubepods/pod1/app/cpu.cfs_period_us", "100000\n");
  r.write(base + "kubepods/pod1/cpu.cfs_quota_us", "150000\n");
  r.write(base + "kubepods/pod1/cpu.cfs_period_us", "100000\n");
  r.write(base + "kubepods/cpu.cfs_quota_us", "400000\n");
  r.write(base + "kubepods/cpu.cfs_period_us", "100000\n");
  r.write(base + "cpu.cfs_quota_us", "-1\n");
  r.write(base + "cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 1.5) << "the pod's quota, below its parent's";

  r.write(base + "kubepods/pod1/app/cpu.cfs_quota_us", "50000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.5) << "the process's own, lower still";
}

TEST(CgroupCpuQuota, V1ContainerSeesOnlyItsOwnCgroupMounted) {
  // Docker without a cgroup namespace: the mount's root is the container's cgroup, which
  // /proc/self/cgroup names from the host's view.
  fake_root r;
  r.write("proc/self/mountinfo",
          "500 400 0:31 /docker/abc123 /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup "
          "rw,cpu,cpuacct\n");
  r.write("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc123\n");
  r.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "50000\n");
  r.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.5);
}

TEST(CgroupCpuQuota, V1PathOutsideTheMountMeansTheMountItself) {
  // A cgroup namespace, or a path the mount does not show: the mount is the process's cgroup.
  fake_root r;
  r.write("proc/self/mountinfo",
          "500 400 0:31 /docker/abc123 /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu\n");
  r.write("proc/self/cgroup", "4:cpu:/system.slice/docker-abc123.scope\n");
  r.write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "200000\n");
  r.write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 2.0);
}

TEST(CgroupCpuQuota, V2ReadsCpuMaxUpToTheMountAndNoFurther) {
  fake_root r;
  r.write("proc/self/mountinfo",
          "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 "
          "cgroup2 rw,nsdelegate,memory_recursiveprot\n");
  r.write("proc/self/cgroup", "0::/user.slice/app.service\n");
  r.write("sys/fs/cgroup/user.slice/app.service/cpu.max", "max 100000\n");
  r.write("sys/fs/cgroup/user.slice/cpu.max", "200000 100000\n");
  r.write("sys/fs/cpu.max", "10000 100000\n");  // above the mount: not a cgroup
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 2.0);
}

TEST(CgroupCpuQuota, V2ContainerWithCgroupNamespace) {
  fake_root r;
  r.write("proc/self/mountinfo", "700 650 0:26 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
  r.write("proc/self/cgroup", "0::/\n");
  r.write("sys/fs/cgroup/cpu.max", "50000 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.5);
}

TEST(CgroupCpuQuota, HybridHostTakesTheLowerOfV1AndV2) {
  fake_root r;
  // Appended, not `std::string(v1_mounts) + "..."`: g++ 12 warns falsely (-Warray-bounds) on
  // that operator+ once it is inlined here.
  std::string mounts(v1_mounts);
  mounts += "40 25 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  r.write("proc/self/mountinfo", mounts);
  r.write("proc/self/cgroup", "4:cpu,cpuacct:/\n0::/svc\n");
  r.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  r.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.0) << "no quota in either";
  r.write("sys/fs/cgroup/unified/svc/cpu.max", "75000 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.75);
  r.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "30000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.3);
}

TEST(CgroupCpuQuota, EscapedMountPoint) {
  // mountinfo writes a space in a path as \040.
  fake_root r;
  r.write("proc/self/mountinfo", "35 25 0:31 / /cg\\040v1/cpu rw - cgroup cgroup rw,cpu\n");
  r.write("proc/self/cgroup", "4:cpu:/job\n");
  r.write("cg v1/cpu/job/cpu.cfs_quota_us", "25000\n");
  r.write("cg v1/cpu/job/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.25);
}

TEST(CgroupCpuQuota, MalformedFilesAreNoQuotaNotACrash) {
  fake_root r;
  r.write("proc/self/mountinfo", "garbage\n35 25 0:31\n - cgroup\n:::\n");
  r.write("proc/self/cgroup", "::::\n4:cpu\n\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(r.path()), 0.0);
}

}  // namespace
}  // namespace corvid::detail
