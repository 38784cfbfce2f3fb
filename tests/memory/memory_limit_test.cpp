#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <corvid/memory/memory_limit.hpp>

namespace {

using corvid::memory_limit;

// MemTotal from /proc/meminfo, in bytes.
std::size_t meminfo_total() {
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  std::size_t kib = 0;
  while (f >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return 0;
}

TEST(memory_limit, physical_memory_matches_meminfo_or_a_cgroup_cap) {
  const std::size_t ram = corvid::physical_memory();
  const std::size_t total = meminfo_total();
  ASSERT_GT(total, 0u);
  EXPECT_LE(ram, total + total / 100);  // sysconf and meminfo agree within rounding
  EXPECT_GT(ram, std::size_t{64} << 20);
}

TEST(memory_limit, bytes_share_and_unlimited) {
  EXPECT_TRUE(memory_limit().is_unlimited());
  EXPECT_EQ(memory_limit::none().resolve(), corvid::unlimited_memory);
  EXPECT_EQ(memory_limit::bytes(1234).resolve(), 1234u);
  EXPECT_FALSE(memory_limit::bytes(1234).is_unlimited());
  EXPECT_EQ(memory_limit::share_of_ram(0.5).resolve(1000), 500u);
  EXPECT_EQ(memory_limit::share_of_ram(2.0).resolve(1000), 1000u);  // capped at the whole
  EXPECT_EQ(memory_limit::share_of_ram(0.5).resolve(corvid::unlimited_memory),
            corvid::unlimited_memory);
  const std::size_t quarter = memory_limit::share_of_ram(0.25).resolve();
  EXPECT_NEAR(static_cast<double>(quarter), static_cast<double>(corvid::physical_memory()) / 4,
              4096.0);
}

}  // namespace
