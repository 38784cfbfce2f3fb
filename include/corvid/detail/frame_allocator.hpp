#pragma once
// Size-class free lists for coroutine frames and per-request state. Steady-state RPC traffic
// creates and destroys the same few object sizes over and over; recycling them per thread
// takes malloc off the hot path (the benchmark counts allocations per call).
#include <cstddef>

#include "corvid/export.hpp"

namespace corvid::detail {

// Returns at least n bytes, max_align_t aligned. Never returns null (throws std::bad_alloc).
CORVID_API void* frame_allocate(std::size_t n);
// Gives back memory from frame_allocate(n), with the same n. Any thread may free.
CORVID_API void frame_deallocate(void* p, std::size_t n) noexcept;

// Mix-in: gives a class pooled operator new/delete.
struct pooled {
  static void* operator new(std::size_t n) { return frame_allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { frame_deallocate(p, n); }
};

}  // namespace corvid::detail
