#include "memory/page_slab.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/detail/byte_buffer.hpp>
#include <corvid/memory/buffer_pool.hpp>

#include <sys/mman.h>

namespace {

using corvid::buffer_pool;
using corvid::detail::page_slab;

// How many of the pages of [p, p + n) are resident (mincore).
std::size_t resident_pages(const char* p, std::size_t n) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((n + page - 1) / page);
  EXPECT_EQ(::mincore(const_cast<char*>(p), n, v.data()), 0);
  std::size_t r = 0;
  for (unsigned char c : v) r += c & 1;
  return r;
}

TEST(page_slab, blocks_are_page_aligned_distinct_and_of_their_class) {
  page_slab slab(4 << 20);
  std::set<char*> seen;
  for (std::size_t cap = 4096; cap <= 256 * 1024; cap *= 2) {
    for (int i = 0; i < 3; ++i) {
      char* p = slab.take(cap);
      ASSERT_NE(p, nullptr) << cap;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
      EXPECT_TRUE(slab.owns(p));
      EXPECT_TRUE(slab.owns(p + cap - 1));
      EXPECT_EQ(slab.capacity_of(p), cap);
      EXPECT_TRUE(seen.insert(p).second);
      std::memset(p, 0x5a, cap);  // the whole block is writable
    }
  }
  for (char* p : seen) slab.give(p);
  EXPECT_EQ(slab.free_blocks(), seen.size());
}

TEST(page_slab, sizes_outside_the_classes_are_refused) {
  page_slab slab(1 << 20);
  EXPECT_EQ(slab.take(0), nullptr);
  EXPECT_EQ(slab.take(100), nullptr);
  EXPECT_EQ(slab.take(5000), nullptr);        // not a class size
  EXPECT_EQ(slab.take(512 * 1024), nullptr);  // above the largest class
  int local = 0;
  EXPECT_FALSE(slab.owns(&local));
}

TEST(page_slab, a_given_block_leaves_memory_and_its_address_is_reused) {
  page_slab slab(1 << 20);
  char* p = slab.take(8192);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, 8192);
  EXPECT_EQ(resident_pages(p, 8192), 2u);
  slab.give(p);
  // Without the madvise the pages would stay resident until reused.
  EXPECT_EQ(resident_pages(p, 8192), 0u);
  char* q = slab.take(8192);
  EXPECT_EQ(q, p);
  EXPECT_EQ(q[0], 0);  // fresh zero pages, not the old bytes
  slab.give(q);
}

TEST(page_slab, a_full_class_says_so_and_others_go_on) {
  page_slab slab(1 << 20);  // 1 MiB per class: four 256 KiB blocks
  std::vector<char*> big;
  for (int i = 0; i < 4; ++i) big.push_back(slab.take(256 * 1024));
  for (char* p : big) ASSERT_NE(p, nullptr);
  EXPECT_EQ(slab.take(256 * 1024), nullptr);
  EXPECT_NE(slab.take(4096), nullptr);  // its own part
  slab.give(big.back());
  EXPECT_EQ(slab.take(256 * 1024), big.back());
}

TEST(page_slab, address_space_is_committed_as_blocks_are_made) {
  page_slab slab(64 << 20);
  EXPECT_EQ(slab.committed_bytes(), 0u);
  char* p = slab.take(4096);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(slab.committed_bytes(), page_slab::commit_step);
  std::vector<char*> more;
  for (int i = 0; i < 256; ++i) more.push_back(slab.take(4096));  // past the first step
  EXPECT_EQ(slab.committed_bytes(), 2 * page_slab::commit_step);
  for (char* m : more) slab.give(m);
  slab.give(p);
}

TEST(page_slab, threads_take_and_give_without_sharing_a_block) {
  page_slab slab(16 << 20);
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        char* p = slab.take(4096 << (i % 3));
        if (p == nullptr) continue;
        const char mark = static_cast<char>('a' + t);
        std::memset(p, mark, 64);
        std::this_thread::yield();
        for (int k = 0; k < 64; ++k) {
          if (p[k] != mark) overlaps.fetch_add(1);
        }
        slab.give(p);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlaps.load(), 0);
}

// The process's pool takes its blocks from the slab, and every way a block is freed sends it
// back there: the pool's own overflow, and a byte_buffer that adopted it (which calls
// detail::buffer_free; std::free of a slab address would abort).
TEST(page_slab, buffer_pool_blocks_come_from_the_slab_and_return_to_it) {
  if (!corvid::detail::slab_backs_buffer_pool) {
    GTEST_SKIP() << "under AddressSanitizer buffer_pool's blocks come from malloc";
  }
  page_slab& slab = page_slab::process();
  buffer_pool pool(0);  // caches nothing: every release frees
  auto a = pool.acquire(6000);
  ASSERT_TRUE(slab.owns(a.data));
  EXPECT_TRUE(corvid::detail::is_pooled_block(a.data));
  std::memset(a.data, 1, a.capacity);
  pool.release(a);
  EXPECT_EQ(resident_pages(a.data, a.capacity), 0u);

  auto b = pool.acquire(16384);
  ASSERT_TRUE(slab.owns(b.data));
  std::memset(b.data, 2, b.capacity);
  {
    corvid::detail::byte_buffer buf;
    buf.adopt_storage(b.data, b.capacity);
    buf.append("hello", 5);
    buf.reserve(20000);  // grows out of the block: the block goes back
    EXPECT_FALSE(slab.owns(buf.data()));
    EXPECT_EQ(buf.view(), "hello");
  }
  EXPECT_EQ(resident_pages(b.data, b.capacity), 0u);
}

}  // namespace
