// server_memory's waiters: a release resumes them in arrival order, only as many as the freed
// memory fits, so one release among thousands of paused connections costs what it wakes, not
// what waits.
#include <vector>

#include <gtest/gtest.h>

#include "memory/server_memory.hpp"

namespace corvid_test {
namespace {

using corvid::detail::server_memory;
constexpr std::size_t kib = 1024;

corvid::server_config config_of(std::size_t bytes) {
  corvid::server_config cfg;
  cfg.max_memory = corvid::memory_limit::bytes(bytes);
  return cfg;
}

TEST(server_memory_waiters, a_release_wakes_waiters_in_order_while_they_fit) {
  const auto cfg = config_of(16 * 1024 * kib);
  server_memory mem(cfg);
  const std::size_t all = mem.in_flight.available();
  ASSERT_TRUE(mem.in_flight.try_reserve(all));  // full: every waiter waits
  std::vector<int> woken;
  const auto never = [] {
    return false;
  };
  mem.wait([&] { woken.push_back(1); }, never, false, true, 100 * kib);
  mem.wait([&] { woken.push_back(2); }, never, false, true, 100 * kib);
  mem.wait([&] { woken.push_back(3); }, never, false, true, 900 * kib);
  mem.wait([&] { woken.push_back(4); }, never, false, true, 10 * kib);  // fits, but behind 3
  EXPECT_TRUE(mem.has_waiters());

  mem.in_flight.release(250 * kib);
  mem.notify();
  EXPECT_EQ(woken, (std::vector<int>{1, 2})) << "3 needs more than is free and 4 waits behind it";
  EXPECT_TRUE(mem.has_waiters());

  mem.in_flight.release(all - 250 * kib);
  mem.notify();
  EXPECT_EQ(woken, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_FALSE(mem.has_waiters());
}

TEST(server_memory_waiters, a_small_release_among_thousands_of_waiters_wakes_only_what_fits) {
  const auto cfg = config_of(64 * 1024 * kib);
  server_memory mem(cfg);
  const std::size_t all = mem.in_flight.available();
  ASSERT_TRUE(mem.in_flight.try_reserve(all));
  std::size_t woken = 0;
  for (int i = 0; i < 8000; ++i) {
    mem.wait([&] { ++woken; }, [] { return false; }, false, true, 2 * kib);  // 16 MiB in all
  }
  mem.in_flight.release(8 * kib);
  mem.notify();
  EXPECT_EQ(woken, 4u) << "8 KiB freed fits four waiters of 2 KiB, not all 8000";
  mem.in_flight.release(all - 16 * kib);
  mem.notify();
  EXPECT_EQ(woken, 8000u);
}

TEST(server_memory_waiters, a_light_waiter_is_woken_before_heavy_ones_ahead_of_it) {
  const auto cfg = config_of(16 * 1024 * kib);
  server_memory mem(cfg);
  const std::size_t all = mem.in_flight.available();
  ASSERT_TRUE(mem.in_flight.try_reserve(all));
  std::vector<int> woken;
  const auto never = [] {
    return false;
  };
  mem.wait([&] { woken.push_back(1); }, never, false, false, 512 * kib);
  mem.wait([&] { woken.push_back(2); }, never, false, false, 8 * kib);
  mem.wait([&] { woken.push_back(3); }, never, false, true, 4 * kib);
  mem.wait([&] { woken.push_back(4); }, never, false, true, 64 * kib);
  mem.in_flight.release(16 * kib);
  mem.notify();
  EXPECT_EQ(woken, (std::vector<int>{3})) << "the light waiter first; 4 does not fit yet";
  mem.in_flight.release(64 * kib);
  mem.notify();
  EXPECT_EQ(woken, (std::vector<int>{3, 4})) << "heavy ones keep their order: 2 waits behind 1";
  mem.in_flight.release(all - 80 * kib);
  mem.notify();
  EXPECT_EQ(woken, (std::vector<int>{3, 4, 1, 2}));
}

TEST(server_memory_waiters, a_heavy_waiter_is_not_woken_into_the_fair_reserve) {
  // Woken, it could not take the reserve anyway: it would retry, fail and wait again.
  const auto cfg = config_of(16 * 1024 * kib);
  server_memory mem(cfg);
  const std::size_t all = mem.server.available();
  ASSERT_TRUE(mem.queued_replies.try_reserve(all));
  std::vector<int> woken;
  mem.wait([&] { woken.push_back(1); }, [] { return false; }, false, false, 64 * kib);
  mem.queued_replies.release(mem.fair_reserve);
  mem.notify();
  EXPECT_TRUE(woken.empty()) << "what was freed is the reserve, which a heavy one may not take";
  mem.queued_replies.release(64 * kib);
  mem.notify();
  EXPECT_EQ(woken, (std::vector<int>{1}));
  mem.queued_replies.release(all - mem.fair_reserve - 64 * kib);
}

TEST(server_memory_waiters, read_and_call_waiters_queue_apart) {
  // A read waiter that does not fit does not hold back call waiters that do.
  const auto cfg = config_of(16 * 1024 * kib);
  server_memory mem(cfg);
  const std::size_t reads = mem.read_buffers.available();
  ASSERT_TRUE(mem.read_buffers.try_reserve(reads));
  std::vector<int> woken;
  mem.wait([&] { woken.push_back(1); }, [] { return false; }, true, true, 64 * kib);
  mem.wait([&] { woken.push_back(2); }, [] { return false; }, false, true, 64 * kib);
  mem.notify();
  EXPECT_EQ(woken, (std::vector<int>{2}));
  mem.read_buffers.release(reads);
  mem.notify();
  EXPECT_EQ(woken, (std::vector<int>{2, 1}));
}

}  // namespace
}  // namespace corvid_test
