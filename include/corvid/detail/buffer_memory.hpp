#pragma once
// Where byte buffers get their memory. Small buffers come from malloc; big ones are mapped
// (mmap) and unmapped when freed. malloc would keep freed megabytes in its arenas: after the
// first big block is freed glibc raises its mmap threshold, later big blocks come from the
// heap, and a burst of big frames leaves the process's RSS far above what it still uses
// (measured: 207 MiB RSS for 56 MiB of live buffers in the flood test). Mapped buffers grow
// with mremap, which moves pages instead of copying bytes. buffer_pool's blocks come from a
// region of their own (src/memory/page_slab.hpp); freeing one anywhere sends it back there.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "corvid/export.hpp"

#include <sys/mman.h>

namespace corvid::detail {

// The address range of buffer_pool's blocks: empty until the first block is made, and
// always under AddressSanitizer (blocks then come from malloc).
struct pooled_range {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
};
CORVID_API extern pooled_range pooled_blocks;
// Hands a block in that range back to the slab (its pages go back to the system).
CORVID_API void return_pooled_block(char* p) noexcept;

inline bool is_pooled_block(const char* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t b = pooled_blocks.begin.load(std::memory_order_acquire);
  return b != 0 && a >= b && a < pooled_blocks.end.load(std::memory_order_relaxed);
}

inline constexpr std::size_t mapped_buffer_threshold = 256 * 1024;

// Which sanitizer this file is compiled with (g++ defines __SANITIZE_*, clang has
// __has_feature).
#if defined(__SANITIZE_THREAD__)
inline constexpr bool built_with_tsan = true;
#elif defined(__has_feature)
inline constexpr bool built_with_tsan = __has_feature(thread_sanitizer);
#else
inline constexpr bool built_with_tsan = false;
#endif
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool built_with_asan = true;
#elif defined(__has_feature)
inline constexpr bool built_with_asan = __has_feature(address_sanitizer);
#else
inline constexpr bool built_with_asan = false;
#endif

// ThreadSanitizer intercepts mmap and munmap but not mremap: pages mremap moves away leave
// their old range's history behind, and a later mmap of that range on another thread looks
// like a race with the first owner's writes. Under TSan a mapped buffer grows by a fresh map
// and a copy instead.
inline constexpr bool grow_mapped_in_place = !built_with_tsan;

inline bool is_mapped_buffer(std::size_t capacity) noexcept {
  return capacity > mapped_buffer_threshold;
}

inline char* buffer_allocate(std::size_t capacity) {
  if (!is_mapped_buffer(capacity)) {
    void* p = std::malloc(capacity == 0 ? 1 : capacity);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<char*>(p);
  }
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<char*>(p);
}

inline void buffer_free(char* p, std::size_t capacity) noexcept {
  if (p == nullptr) return;
  if (is_mapped_buffer(capacity)) {
    ::munmap(p, capacity);
  } else if (is_pooled_block(p)) {
    return_pooled_block(p);
  } else {
    std::free(p);
  }
}

// Moves a buffer of `old_capacity` (its first `used` bytes matter) to `capacity` bytes.
inline char* buffer_reallocate(char* p, std::size_t old_capacity, std::size_t used,
                               std::size_t capacity) {
  if (p == nullptr) return buffer_allocate(capacity);
  const bool was_mapped = is_mapped_buffer(old_capacity);
  const bool mapped = is_mapped_buffer(capacity);
  if (!was_mapped && !mapped && !is_pooled_block(p)) {
    void* q = std::realloc(p, capacity == 0 ? 1 : capacity);
    if (q == nullptr) throw std::bad_alloc();
    return static_cast<char*>(q);
  }
  if (was_mapped && mapped && grow_mapped_in_place) {
    void* q = ::mremap(p, old_capacity, capacity, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) throw std::bad_alloc();
    return static_cast<char*>(q);
  }
  char* q = buffer_allocate(capacity);
  if (used != 0) std::memcpy(q, p, used < capacity ? used : capacity);
  buffer_free(p, old_capacity);
  return q;
}

}  // namespace corvid::detail
