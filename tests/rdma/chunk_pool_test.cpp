// The registered-memory chunk pool: reuse, watermark, all-or-none, idle release.
#include "rdma/chunk_pool.hpp"

#include <cstdlib>
#include <memory>

#include <gtest/gtest.h>

namespace {

using corvid::rdma::chunk_pool;
using corvid::rdma::registered_chunk;
using namespace std::chrono_literals;

// Counts registrations; fails them on demand.
struct fake_registrar final : corvid::rdma::chunk_registrar {
  int* live;
  int fail_after = -1;  // registrations allowed before failing (-1: never fail)
  explicit fake_registrar(int* l) : live(l) {}
  registered_chunk register_chunk(std::size_t size) override {
    if (fail_after == 0) return {};
    if (fail_after > 0) --fail_after;
    ++*live;
    return {static_cast<char*>(std::malloc(size)), 42, nullptr};
  }
  void deregister_chunk(const registered_chunk& c) noexcept override {
    --*live;
    std::free(c.data);
  }
};

constexpr std::size_t kib = 1024;

TEST(chunk_pool, reuses_released_chunks_without_registering_again) {
  int live = 0;
  chunk_pool pool(std::make_unique<fake_registrar>(&live), 4 * kib, 64 * kib, 1000ms);
  const auto t0 = chunk_pool::clock::now();
  std::vector<registered_chunk> a;
  ASSERT_TRUE(pool.acquire(3, a, t0));
  EXPECT_EQ(live, 3);
  for (auto& c : a) pool.release(c, t0);
  std::vector<registered_chunk> b;
  ASSERT_TRUE(pool.acquire(2, b, t0 + 10ms));
  EXPECT_EQ(live, 3);  // served from the cache
  const auto s = pool.stats();
  EXPECT_EQ(s.in_use, 2u);
  EXPECT_EQ(s.cached, 1u);
  EXPECT_EQ(s.registrations, 3u);
  EXPECT_EQ(s.registered_bytes, 12 * kib);
  for (auto& c : b) pool.release(c, t0 + 10ms);
}

TEST(chunk_pool, refuses_past_the_watermark_and_keeps_existing_holders) {
  int live = 0;
  chunk_pool pool(std::make_unique<fake_registrar>(&live), 4 * kib, 40 * kib, 1000ms);
  std::vector<registered_chunk> first, second, third;
  ASSERT_TRUE(pool.acquire(6, first));
  EXPECT_FALSE(pool.acquire(6, second));  // 12 chunks > 10 allowed: none handed out
  EXPECT_TRUE(second.empty());
  EXPECT_EQ(pool.stats().in_use, 6u);
  EXPECT_EQ(pool.stats().refusals, 1u);
  ASSERT_TRUE(pool.acquire(4, third));  // exactly at the watermark is fine
  EXPECT_EQ(pool.stats().registered_bytes, 40 * kib);
  for (auto& c : first) pool.release(c);
  ASSERT_TRUE(pool.acquire(6, second));  // freed chunks count again
  EXPECT_EQ(live, 10);
  for (auto& c : second) pool.release(c);
  for (auto& c : third) pool.release(c);
}

TEST(chunk_pool, a_failed_registration_gives_back_what_it_took) {
  int live = 0;
  auto reg = std::make_unique<fake_registrar>(&live);
  reg->fail_after = 2;
  chunk_pool pool(std::move(reg), 4 * kib, 1024 * kib, 1000ms);
  std::vector<registered_chunk> out;
  EXPECT_FALSE(pool.acquire(4, out));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(live, 0);
  EXPECT_EQ(pool.stats().registered_bytes, 0u);
}

TEST(chunk_pool, idle_chunks_are_released_after_the_idle_time) {
  int live = 0;
  chunk_pool pool(std::make_unique<fake_registrar>(&live), 4 * kib, 64 * kib, 100ms);
  const auto t0 = chunk_pool::clock::now();
  std::vector<registered_chunk> a;
  ASSERT_TRUE(pool.acquire(4, a, t0));
  pool.release(a[0], t0);
  pool.release(a[1], t0 + 50ms);
  pool.trim(t0 + 99ms);
  EXPECT_EQ(live, 4);  // nothing idle long enough yet
  pool.trim(t0 + 120ms);
  EXPECT_EQ(live, 3);  // a[0] went back to the system, a[1] is still recent
  EXPECT_EQ(pool.stats().cached, 1u);
  pool.release(a[2], t0 + 200ms);  // releasing also trims: a[1] idle for 150 ms
  EXPECT_EQ(live, 2);
  EXPECT_EQ(pool.stats().cached, 1u);
  EXPECT_EQ(pool.stats().registered_bytes, 8 * kib);
  pool.release(a[3], t0 + 200ms);
  pool.trim(t0 + 400ms);
  EXPECT_EQ(live, 0);
  EXPECT_EQ(pool.stats().releases, 4u);
}

// schedule_trim() tells the releasing stream when to trim, so idle chunks go even if the pool
// is never used again; releases close together share one trim.
TEST(chunk_pool, schedules_one_trim_for_releases_close_together) {
  int live = 0;
  chunk_pool pool(std::make_unique<fake_registrar>(&live), 4 * kib, 64 * kib, 800ms);
  EXPECT_FALSE(pool.schedule_trim());  // nothing free: nothing to trim
  const auto t0 = chunk_pool::clock::now();
  std::vector<registered_chunk> a;
  ASSERT_TRUE(pool.acquire(4, a, t0));
  pool.release(a[0], t0);
  const auto first = pool.schedule_trim();
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, t0 + 800ms + 100ms);  // idle, plus an eighth of it to share the timer
  pool.release(a[1], t0 + 50ms);
  EXPECT_FALSE(pool.schedule_trim());  // idle by t0 + 850 ms: the first trim sees it
  pool.release(a[2], t0 + 300ms);
  const auto second = pool.schedule_trim();
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, t0 + 300ms + 900ms);
  pool.trim(*first);  // what the first timer does: a[0] and a[1] go, a[2] is still recent
  EXPECT_EQ(live, 2);
  pool.trim(*second);
  EXPECT_EQ(live, 1);  // a[3] is still in use
  EXPECT_EQ(pool.stats().registered_bytes, 4 * kib);
  pool.release(a[3], *second);
}

TEST(chunk_pool, an_idle_time_of_forever_schedules_no_trim) {
  int live = 0;
  chunk_pool pool(std::make_unique<fake_registrar>(&live), 4 * kib, 64 * kib,
                  std::chrono::milliseconds::max());
  std::vector<registered_chunk> a;
  ASSERT_TRUE(pool.acquire(1, a));
  pool.release(a[0]);
  EXPECT_FALSE(pool.schedule_trim());
}

}  // namespace
