// usable_cpus() and the defaults that follow it: the rounding and polling rules, the affinity
// mask, and (where this machine lets a test make one) a real cgroup v1 CPU quota around the
// process while it builds a server_config and serves a call.
#include "corvid/runtime/cpu_budget.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sched.h>
#include <sstream>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "corvid/corvid.hpp"

#include "connect.hpp"

namespace corvid {
namespace {

using namespace std::chrono_literals;

cpu_budget budget(std::size_t affinity, double quota) {
  cpu_budget b;
  b.affinity_cpus = affinity;
  b.quota_cpus = quota;
  return b;
}

TEST(CpuBudget, ThreadsAreTheBudgetRoundedUp) {
  EXPECT_EQ(budget(8, 0).threads(), 8u) << "no quota: the affinity mask";
  EXPECT_EQ(budget(8, 0.5).threads(), 1u);
  EXPECT_EQ(budget(8, 1.5).threads(), 2u);
  EXPECT_EQ(budget(8, 2.0).threads(), 2u);
  EXPECT_EQ(budget(8, 2.0000001).threads(), 2u) << "a period that does not divide evenly";
  EXPECT_EQ(budget(2, 4.0).threads(), 2u) << "a quota above the mask: the mask";
  EXPECT_EQ(budget(1, 0).threads(), 1u);
  EXPECT_EQ(budget(8, 0.01).threads(), 1u) << "never zero";
  EXPECT_DOUBLE_EQ(budget(8, 0.5).cpus(), 0.5);
  EXPECT_DOUBLE_EQ(budget(2, 4.0).cpus(), 2.0);
}

TEST(CpuBudget, PollingBudgetShrinksWithTheQuotaPerReactor) {
  EXPECT_EQ(budget(8, 0).adaptive_poll(), io_pool::default_adaptive_poll);
  EXPECT_EQ(budget(8, 2.0).adaptive_poll(), io_pool::default_adaptive_poll);
  EXPECT_EQ(budget(2, 4.0).adaptive_poll(), io_pool::default_adaptive_poll);
  EXPECT_EQ(budget(8, 0.5).adaptive_poll(), io_pool::default_adaptive_poll / 2)
      << "half a CPU for one reactor";
  EXPECT_EQ(budget(8, 1.5).adaptive_poll(), io_pool::default_adaptive_poll * 3 / 4)
      << "1.5 CPUs for two reactors";
  EXPECT_EQ(budget(8, 0.01).adaptive_poll(), 1us);
}

// Runs with the calling thread's affinity mask narrowed to one CPU, then restores it.
class one_cpu {
 public:
  one_cpu() {
    CPU_ZERO(&saved_);
    ok_ = ::sched_getaffinity(0, sizeof(saved_), &saved_) == 0;
    for (int c = 0; ok_ && c < CPU_SETSIZE; ++c) {
      if (!CPU_ISSET(c, &saved_)) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      ok_ = ::sched_setaffinity(0, sizeof(one), &one) == 0;
      return;
    }
  }
  ~one_cpu() {
    if (ok_) ::sched_setaffinity(0, sizeof(saved_), &saved_);
  }
  one_cpu(const one_cpu&) = delete;
  one_cpu& operator=(const one_cpu&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

TEST(CpuBudget, FollowsTheAffinityMask) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(mask), &mask), 0);
  EXPECT_EQ(usable_cpus().affinity_cpus, static_cast<std::size_t>(CPU_COUNT(&mask)));
  one_cpu narrowed;
  ASSERT_TRUE(narrowed.ok()) << std::strerror(errno);
  EXPECT_EQ(usable_cpus().affinity_cpus, 1u);
  const server_config cfg;
  EXPECT_EQ(cfg.io_threads, 1u) << "one CPU allowed: one reactor, whatever the machine has";
  EXPECT_EQ(cfg.worker_threads, 1u);
}

bool write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// The process's cgroup in the v1 hierarchy holding `cpu` ("" if none).
std::string own_cpu_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::stringstream controllers(line.substr(a + 1, b - a - 1));
    for (std::string c; std::getline(controllers, c, ',');) {
      if (c == "cpu") return line.substr(b + 1);
    }
  }
  return {};
}

// A cgroup v1 CPU group holding this whole process for the scope; moves it back and removes
// the group at the end. Skips the test where the machine does not allow it (no v1 `cpu`
// hierarchy at /sys/fs/cgroup/cpu, not root, or a read-only cgroupfs as in most containers).
class cpu_quota_scope {
 public:
  static constexpr const char* mount = "/sys/fs/cgroup/cpu";

  bool enter(long quota_us, long period_us, std::string& why) {
    home_ = own_cpu_cgroup();
    if (home_.empty()) {
      why = "no cgroup v1 cpu controller in /proc/self/cgroup (a cgroup v2-only machine)";
      return false;
    }
    dir_ = std::string(mount) + "/corvid-test-" + std::to_string(::getpid());
    if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
      why = "cannot create " + dir_ + ": " + std::strerror(errno);
      dir_.clear();
      return false;
    }
    if (!write_file(dir_ + "/cpu.cfs_period_us", std::to_string(period_us)) ||
        !write_file(dir_ + "/cpu.cfs_quota_us", std::to_string(quota_us))) {
      why = "cannot set the quota in " + dir_ + ": " + std::strerror(errno);
      return false;
    }
    if (!write_file(dir_ + "/cgroup.procs", std::to_string(::getpid()))) {
      why = "cannot move the process into " + dir_ + ": " + std::strerror(errno);
      return false;
    }
    inside_ = true;
    return true;
  }
  ~cpu_quota_scope() {
    if (inside_)
      write_file(std::string(mount) + home_ + "/cgroup.procs", std::to_string(::getpid()));
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }

 private:
  std::string home_, dir_;
  bool inside_ = false;
};

int answer(int x) { return x + 1; }

TEST(CpuBudget, RealCgroupV1QuotaSizesTheServer) {
  cpu_quota_scope scope;
  std::string why;
  if (!scope.enter(50'000, 100'000, why)) GTEST_SKIP() << why;
  const cpu_budget b = usable_cpus();
  EXPECT_DOUBLE_EQ(b.quota_cpus, 0.5);
  EXPECT_EQ(b.threads(), 1u);

  server_config cfg;
  EXPECT_EQ(cfg.io_threads, 1u) << "half a CPU: one reactor";
  EXPECT_EQ(cfg.worker_threads, 1u);
  EXPECT_EQ(cfg.adaptive_poll, io_pool::default_adaptive_poll / 2)
      << "half a CPU per reactor: half the polling budget";

  // A server with these defaults serves under the quota.
  cfg.address = "127.0.0.1";
  rpc_server server(cfg);
  server.register_handler<answer>();
  ASSERT_FALSE(server.async_start());
  rpc_client client;
  ASSERT_FALSE(sync_wait(test::connect(client, "127.0.0.1:" + std::to_string(server.port()))));
  auto r = sync_wait([&]() -> task<expected<int, rpc_error>> {
    co_return co_await client.call<answer>(41);
  }());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(*r, 42);
  client.close();
  server.stop();
}

TEST(CpuBudget, RealCgroupV1QuotaAboveOneCpu) {
  cpu_quota_scope scope;
  std::string why;
  if (!scope.enter(150'000, 100'000, why)) GTEST_SKIP() << why;
  const cpu_budget b = usable_cpus();
  EXPECT_DOUBLE_EQ(b.quota_cpus, 1.5);
  const std::size_t want = std::min<std::size_t>(2, b.affinity_cpus);
  const server_config cfg;
  EXPECT_EQ(cfg.io_threads, want) << "1.5 CPUs: rounded up, within the mask";
  EXPECT_EQ(cfg.worker_threads, want);
  if (want == 2) {
    EXPECT_EQ(cfg.adaptive_poll, io_pool::default_adaptive_poll * 3 / 4)
        << "1.5 CPUs for two reactors: three quarters of the budget";
  }
}

}  // namespace
}  // namespace corvid
