#pragma once
// Free lists of I/O buffers by size class, one pool per reactor thread and shared by that
// reactor's connections: a connection that goes quiet hands its read buffer back, and the
// next busy one takes it without reaching malloc. Buffers above the largest class are
// one-offs: they go straight back to the system, so one huge frame does not pin memory.
//
// Not thread-safe: a pool belongs to one thread (for_this_thread()). A block may be released
// on another thread than the one that acquired it; it then joins that thread's pool.
// Blocks within the classes come from the process's page slab (src/memory/page_slab.hpp:
// page-aligned, apart from malloc's heap, their pages returned to the system when the pool
// frees them), or from malloc when the slab has none; bigger ones from
// detail::buffer_allocate (mmap). detail::buffer_free and buffer_reallocate know each kind, so
// a byte_buffer may grow or free an adopted block.
#include <array>
#include <cstddef>
#include <cstdint>

#include "corvid/export.hpp"

namespace corvid {

class memory_tracker;

class CORVID_API buffer_pool {
 public:
  static constexpr std::size_t smallest_class = 4 * 1024;
  static constexpr std::size_t largest_class = 256 * 1024;
  static constexpr std::size_t class_count = 7;  // 4 KiB, 8 KiB ... 256 KiB

  struct block {
    char* data = nullptr;
    std::size_t capacity = 0;
  };

  // Idle blocks beyond `max_cached_bytes` are freed. Cached bytes are charged to `tracker`
  // when one is given (the process tracker's "buffer_pools" node for thread pools).
  explicit buffer_pool(std::size_t max_cached_bytes = 4 * 1024 * 1024,
                       memory_tracker* tracker = nullptr) noexcept;
  ~buffer_pool();
  buffer_pool(const buffer_pool&) = delete;
  buffer_pool& operator=(const buffer_pool&) = delete;

  // The calling thread's pool (created on first use, freed at thread exit).
  static buffer_pool& for_this_thread();

  // A block of at least `size` bytes: a cached one of its class when there is one. Throws
  // std::bad_alloc when the system has no memory.
  block acquire(std::size_t size);
  // Returns a block: cached under the largest class it covers, or freed.
  void release(block b) noexcept;

  std::size_t cached_bytes() const noexcept { return cached_bytes_; }
  std::uint64_t hits() const noexcept { return hits_; }
  std::uint64_t misses() const noexcept { return misses_; }
  // Frees every cached block.
  void trim() noexcept;

  // Capacity acquire(size) hands out for sizes within the classes.
  static std::size_t class_size(std::size_t size) noexcept;

 private:
  struct free_block {
    free_block* next;
  };
  std::array<free_block*, class_count> free_{};
  std::size_t max_cached_bytes_;
  std::size_t cached_bytes_ = 0;
  memory_tracker* tracker_;
  std::uint64_t hits_ = 0;
  std::uint64_t misses_ = 0;
};

}  // namespace corvid
