#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/detail/byte_buffer.hpp>
#include <corvid/memory/buffer_pool.hpp>
#include <corvid/memory/memory_tracker.hpp>

namespace {

using corvid::buffer_pool;

TEST(buffer_pool, size_classes_round_up_within_the_range) {
  EXPECT_EQ(buffer_pool::class_size(1), 4096u);
  EXPECT_EQ(buffer_pool::class_size(4096), 4096u);
  EXPECT_EQ(buffer_pool::class_size(4097), 8192u);
  EXPECT_EQ(buffer_pool::class_size(200 * 1024), 256u * 1024);
  EXPECT_EQ(buffer_pool::class_size(300 * 1024), 300u * 1024);  // one-off: exact
}

TEST(buffer_pool, steady_state_reuses_blocks) {
  corvid::memory_tracker t("pool");
  buffer_pool pool(1 << 20, &t);
  auto a = pool.acquire(5000);
  EXPECT_EQ(a.capacity, 8192u);
  std::memset(a.data, 1, a.capacity);
  char* const first = a.data;
  pool.release(a);
  EXPECT_EQ(pool.cached_bytes(), 8192u);
  EXPECT_EQ(t.current(), 8192u);  // idle cached bytes are visible to the tracker
  for (int i = 0; i < 100; ++i) {
    auto b = pool.acquire(6000);
    EXPECT_EQ(b.data, first);
    pool.release(b);
  }
  EXPECT_EQ(pool.misses(), 1u);
  EXPECT_EQ(pool.hits(), 100u);
  pool.trim();
  EXPECT_EQ(pool.cached_bytes(), 0u);
  EXPECT_EQ(t.current(), 0u);
}

TEST(buffer_pool, large_one_off_blocks_go_back_to_the_system) {
  corvid::memory_tracker t("pool");
  buffer_pool pool(64 << 20, &t);
  auto big = pool.acquire(4 << 20);
  EXPECT_EQ(big.capacity, std::size_t{4} << 20);
  pool.release(big);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  EXPECT_EQ(t.current(), 0u);
}

TEST(buffer_pool, cache_is_capped) {
  buffer_pool pool(3 * 4096);
  std::vector<buffer_pool::block> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(pool.acquire(4096));
  for (auto b : blocks) pool.release(b);
  EXPECT_EQ(pool.cached_bytes(), 3u * 4096);
}

TEST(buffer_pool, odd_capacity_is_filed_under_the_class_below) {
  buffer_pool pool;
  void* p = std::malloc(12 * 1024);
  pool.release({static_cast<char*>(p), 12 * 1024});
  EXPECT_EQ(pool.cached_bytes(), 8u * 1024);
  auto b = pool.acquire(8 * 1024);
  EXPECT_EQ(b.data, p);
  EXPECT_EQ(b.capacity, 8u * 1024);
  pool.release(b);
}

TEST(buffer_pool, byte_buffer_adopts_and_hands_back_blocks) {
  buffer_pool pool;
  corvid::detail::byte_buffer buf;
  auto blk = pool.acquire(4096);
  buf.adopt_storage(blk.data, blk.capacity);
  EXPECT_EQ(buf.capacity(), 4096u);
  buf.append("hello");
  buf.reserve(16384);  // realloc of a pool block is fine: it came from malloc
  EXPECT_EQ(buf.view(), "hello");
  auto [p, cap] = buf.release_storage();
  EXPECT_EQ(buf.capacity(), 0u);
  EXPECT_TRUE(buf.empty());
  pool.release({p, cap});
  EXPECT_EQ(pool.cached_bytes(), 16384u);
}

// A read buffer that grows for a big frame and shrinks back, connection after connection:
// after the first round every block comes from the thread's pool, with contents kept.
TEST(buffer_pool, pooled_byte_buffer_grows_and_shrinks_through_the_thread_pool) {
  std::thread([] {  // a fresh thread: its pool starts empty
    buffer_pool& pool = buffer_pool::for_this_thread();
    for (int round = 0; round < 3; ++round) {
      corvid::detail::byte_buffer buf;
      auto blk = pool.acquire(8192);
      buf.adopt_storage(blk.data, blk.capacity);
      buf.draw_from_thread_pool();
      buf.append("frame header");
      buf.reserve(100 * 1024);  // a 100 KiB frame arrives: 128 KiB class
      EXPECT_EQ(buf.capacity(), 128u * 1024);
      EXPECT_EQ(buf.view(), "frame header");
      buf.consume(buf.size());
      buf.append("next");
      buf.shrink_to(8192);  // idle again: the big block goes back to the pool
      EXPECT_EQ(buf.capacity(), 8192u);
      EXPECT_EQ(buf.view(), "next");
      auto [p, cap] = buf.release_storage();
      pool.release({p, cap});
    }
    // Round 1: two misses (8 KiB, 128 KiB); rounds 2 and 3 hit for all three acquires each.
    EXPECT_EQ(pool.misses(), 2u);
    EXPECT_EQ(pool.hits(), 7u);  // round 1's shrink reused its first 8 KiB block, too
    EXPECT_EQ(pool.cached_bytes(), 8192u + 128u * 1024);
    // Above the classes the buffer is a one-off: nothing of it stays cached.
    corvid::detail::byte_buffer big;
    big.draw_from_thread_pool();
    big.reserve(1 << 20);
    big.shrink_to(0);
    EXPECT_EQ(pool.cached_bytes(), 8192u + 128u * 1024);
    pool.trim();
  })
      .join();
}

TEST(buffer_pool, per_thread_pools_are_distinct) {
  buffer_pool* mine = &buffer_pool::for_this_thread();
  buffer_pool* other = nullptr;
  std::thread([&] { other = &buffer_pool::for_this_thread(); }).join();
  EXPECT_NE(mine, other);
  EXPECT_EQ(mine, &buffer_pool::for_this_thread());
}

}  // namespace
