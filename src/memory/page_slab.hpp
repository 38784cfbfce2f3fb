#pragma once
// Where buffer_pool's blocks come from: a stretch of address space of their own, apart from
// malloc's heap, carved into page-aligned blocks by size class. A block handed back has its
// pages returned to the system at once (madvise MADV_DONTNEED), and its address is kept for
// the next block of its class.
//
// Why not malloc: blocks taken from malloc sit between the connection objects allocated
// around them. An idle connection gives its read buffer back, but the pages the buffer
// shared with its neighbours stay resident, so a server whose 10,000 connections each made
// one call and went idle kept 8.7 KiB per connection against 4.0 KiB for connections that
// never called (docs/benchmarks.md, "Idle connections"); freed heap cannot be trimmed where a
// live object shares its page.
//
// Each class has its own equal part of the reservation, so a block's class follows from its
// address alone. Address space is committed (mprotect) 1 MiB at a time as blocks are first
// made, so a strict overcommit policy charges only what was used. Thread-safe: one mutex,
// taken only when a thread's buffer_pool misses or overflows, never per call.
//
// Under AddressSanitizer buffer_pool keeps taking its blocks from malloc, which gives every
// block redzones and use-after-free checks; the slab's own tests still run there.
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "corvid/detail/buffer_memory.hpp"
#include "corvid/memory/buffer_pool.hpp"

namespace corvid::detail {

inline constexpr bool slab_backs_buffer_pool = !built_with_asan;

class page_slab {
 public:
  static constexpr std::size_t class_count = buffer_pool::class_count;
  static constexpr std::size_t smallest_class = buffer_pool::smallest_class;
  static constexpr std::size_t commit_step = std::size_t{1} << 20;

  // Reserves `bytes_per_class` of address space for each class (rounded up to commit_step);
  // nothing is committed yet. If the system refuses the reservation, take() always fails.
  explicit page_slab(std::size_t bytes_per_class) noexcept;
  ~page_slab();
  page_slab(const page_slab&) = delete;
  page_slab& operator=(const page_slab&) = delete;

  // The slab behind every thread's buffer_pool (made on first use, never destroyed: blocks
  // may be freed during static destruction). Its range is published to
  // detail::pooled_blocks (buffer_memory.hpp), so that freeing a block anywhere returns it here.
  static page_slab& process() noexcept;

  // A block of exactly `capacity` bytes, page-aligned; null if `capacity` is not one of
  // buffer_pool's classes, or the class's part of the reservation is used up (the caller then
  // takes memory from malloc).
  char* take(std::size_t capacity) noexcept;
  // Gives back a block that take() returned: its pages go back to the system.
  void give(char* p) noexcept;
  bool owns(const void* p) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= begin_ && a < end_;
  }
  // The class capacity of a block that owns() says is here.
  std::size_t capacity_of(const void* p) const noexcept { return smallest_class << class_of(p); }
  // Blocks given back and not taken again, over all classes.
  std::size_t free_blocks() const;
  // Address space committed so far (blocks ever made, in commit_step units per class).
  std::size_t committed_bytes() const;

 private:
  // A block's class index: which part of the reservation it lies in.
  std::size_t class_of(const void* p) const noexcept {
    return (reinterpret_cast<std::uintptr_t>(p) - begin_) / part_;
  }
  struct part {
    std::uintptr_t next = 0;       // where the next new block starts
    std::uintptr_t committed = 0;  // committed up to here
    std::uintptr_t limit = 0;      // the end of this class's part
    std::vector<char*> free;       // given back; kept outside the blocks, so a free block's
                                   // pages stay untouched
  };
  std::uintptr_t begin_ = 0;
  std::uintptr_t end_ = 0;
  std::size_t part_ = 0;
  mutable std::mutex mutex_;
  std::array<part, class_count> parts_{};
};

}  // namespace corvid::detail
