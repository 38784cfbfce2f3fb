// frame_allocator: per-thread size-class recycling, big sizes, cross-thread frees, alignment.
#include "corvid/detail/frame_allocator.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace corvid::detail {
namespace {

bool aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t) == 0;
}

TEST(FrameAllocator, FreedBlockIsReusedForSameSizeClass) {
  void* p = frame_allocate(100);
  frame_deallocate(p, 100);
  void* q = frame_allocate(100);
  EXPECT_EQ(q, p) << "same size after free must come from the thread's free list";
  frame_deallocate(q, 100);
  // The block stays in the frame cache: a plain malloc of the same size in between cannot
  // take it (with malloc alone, glibc's own LIFO cache would hand p to that malloc).
  void* other = std::malloc(128);
  EXPECT_NE(other, p);
  void* again = frame_allocate(100);
  EXPECT_EQ(again, p);
  std::free(other);
  frame_deallocate(again, 100);
  // 100 and 128 share a 64-byte granule class, so the block serves either size.
  void* r = frame_allocate(128);
  EXPECT_EQ(r, p);
  std::memset(r, 0xAB, 128);  // the recycled block really has the class size (ASan checks)
  frame_deallocate(r, 128);
}

TEST(FrameAllocator, DifferentClassesDoNotShareBlocks) {
  void* small = frame_allocate(64);
  frame_deallocate(small, 64);
  void* big = frame_allocate(65);  // next class up: must not get the 64-byte block
  EXPECT_NE(big, small);
  std::memset(big, 0, 65);
  frame_deallocate(big, 65);
}

TEST(FrameAllocator, SizesAboveTwoKibWork) {
  for (std::size_t n : {2048u, 2049u, 4096u, 65536u, 1u << 20}) {
    void* p = frame_allocate(n);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(aligned(p)) << n;
    std::memset(p, 0x5A, n);
    EXPECT_EQ(static_cast<unsigned char*>(p)[n - 1], 0x5A);
    frame_deallocate(p, n);
  }
}

// Every block is live at once, filled with its own byte: overlap or a short block would
// corrupt a neighbour's pattern (and trip ASan).
TEST(FrameAllocator, ManySizesAreDistinctAlignedAndWritable) {
  struct block {
    unsigned char* p;
    std::size_t n;
  };
  std::vector<block> live;
  for (std::size_t n = 0; n <= 4200; n += (n < 300 ? 1 : 37)) {
    auto* p = static_cast<unsigned char*>(frame_allocate(n));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(aligned(p)) << n;
    std::memset(p, static_cast<int>(n & 0xFF), n);
    live.push_back({p, n});
  }
  for (const block& b : live) {
    for (std::size_t i = 0; i < b.n; ++i) {
      ASSERT_EQ(b.p[i], static_cast<unsigned char>(b.n & 0xFF)) << "size " << b.n;
    }
    frame_deallocate(b.p, b.n);
  }
}

// Frames are created on one reactor and may die on another: the freeing thread caches the
// block and can hand it out itself.
TEST(FrameAllocator, MemoryFreedOnAnotherThread) {
  void* from_worker = nullptr;
  std::thread([&] { from_worker = frame_allocate(200); }).join();
  std::memset(from_worker, 1, 200);
  frame_deallocate(from_worker, 200);
  void* again = frame_allocate(200);
  EXPECT_EQ(again, from_worker) << "the main thread now owns the block in its cache";
  frame_deallocate(again, 200);

  // And the other way round, many blocks, more than a cache keeps: the worker must free the
  // surplus and its cache on exit (LeakSanitizer checks).
  std::vector<void*> blocks;
  for (int i = 0; i < 600; ++i) blocks.push_back(frame_allocate(300));
  std::thread([&] {
    for (void* p : blocks) frame_deallocate(p, 300);
  }).join();
}

TEST(FrameAllocator, PooledMixinRecyclesObjects) {
  struct obj : pooled {
    char payload[500];
  };
  auto* a = new obj;
  std::memset(a->payload, 3, sizeof a->payload);
  delete a;
  auto* b = new obj;
  EXPECT_EQ(static_cast<void*>(b), static_cast<void*>(a));
  delete b;
}

// A block allocated while the thread's cache is already destroyed (a thread_local destructor
// running after it) must still be a full class-size block if another thread later caches it.
void* late_block = nullptr;
struct allocate_at_thread_exit {
  int touched = 0;
  ~allocate_at_thread_exit() { late_block = frame_allocate(65); }
};
thread_local allocate_at_thread_exit late_allocator;

TEST(FrameAllocator, BlockAllocatedAfterCacheDiedIsFullClassSize) {
  std::thread([] {
    late_allocator.touched = 1;              // constructed first, so destroyed last
    frame_deallocate(frame_allocate(8), 8);  // now the cache exists and dies before it
  }).join();
  ASSERT_NE(late_block, nullptr);
  // A fresh thread, so its cache has room whatever earlier tests left on this one.
  std::size_t usable = 0;
  std::thread([&] {
    frame_deallocate(late_block, 65);  // cached in class 65..128
    void* q = frame_allocate(128);
    usable = malloc_usable_size(q);             // blocks are malloc-backed
    if (usable >= 128) std::memset(q, 0, 128);  // a short block would corrupt the heap
    frame_deallocate(q, 128);
  }).join();
  EXPECT_GE(usable, 128u);
}

}  // namespace
}  // namespace corvid::detail
