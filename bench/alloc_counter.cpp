#include "alloc_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace corvid::bench {
namespace {
thread_local bool tracked = false;
std::atomic<std::uint64_t> allocations{0};

void* counted_alloc(std::size_t n) {
  if (tracked) allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* counted_aligned_alloc(std::size_t n, std::align_val_t a) {
  if (tracked) allocations.fetch_add(1, std::memory_order_relaxed);
  const auto align = static_cast<std::size_t>(a);
  void* p = std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void track_this_thread() noexcept { tracked = true; }
std::uint64_t tracked_allocations() noexcept { return allocations.load(std::memory_order_relaxed); }

}  // namespace corvid::bench

// The replacements. Every form routes to malloc/free so any delete matches any new.
void* operator new(std::size_t n) { return corvid::bench::counted_alloc(n); }
void* operator new[](std::size_t n) { return corvid::bench::counted_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return corvid::bench::counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t a) {
  return corvid::bench::counted_aligned_alloc(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return corvid::bench::counted_aligned_alloc(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
