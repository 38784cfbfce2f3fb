#pragma once
// A standard allocator over frame_allocator's per-thread size-class free lists: for the
// small, short-lived blocks a steady stream of calls allocates and frees over and over
// (asio's operations, a stream's item queue), which then come from the thread's lists
// instead of the heap once they have been used once.
#include <cstddef>

#include "corvid/detail/frame_allocator.hpp"

namespace corvid::detail {

template <class T>
struct recycling_allocator {
  using value_type = T;
  recycling_allocator() noexcept = default;
  template <class U>
  recycling_allocator(const recycling_allocator<U>&) noexcept {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t), "frame_allocate aligns to max_align_t");
    return static_cast<T*>(frame_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { frame_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const recycling_allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace corvid::detail
