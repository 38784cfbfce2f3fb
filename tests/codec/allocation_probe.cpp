// The replaceable global allocation functions ([new.delete]), all routed through one counter.
// In a translation unit of their own: where GCC can see operator new's body next to a delete
// that calls free(), it reports a false new/free mismatch (-Wmismatched-new-delete).
#include "allocation_probe.hpp"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace corvid::codec::test {
namespace {

bool g_armed = false;
probe_counts g_counts;

void* counted_alloc(std::size_t size, std::size_t align, bool may_throw) {
  if (g_armed) {
    g_counts.bytes += size;
    ++g_counts.count;
    if (g_counts.bytes > probe_guard_bytes) {
      g_counts.refused = true;
      if (may_throw) throw std::bad_alloc();
      return nullptr;
    }
  }
  if (size == 0) size = 1;  // operator new(0) must still return a unique pointer
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(align, (size + align - 1) / align * align);
  if (p == nullptr && may_throw) throw std::bad_alloc();
  return p;
}

}  // namespace

void probe_arm() noexcept {
  g_counts = probe_counts{};
  g_armed = true;
}

probe_counts probe_disarm() noexcept {
  g_armed = false;
  return g_counts;
}

}  // namespace corvid::codec::test

using corvid::codec::test::counted_alloc;

void* operator new(std::size_t size) { return counted_alloc(size, 0, true); }
void* operator new[](std::size_t size) { return counted_alloc(size, 0, true); }
void* operator new(std::size_t size, std::align_val_t a) {
  return counted_alloc(size, static_cast<std::size_t>(a), true);
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return counted_alloc(size, static_cast<std::size_t>(a), true);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return counted_alloc(size, 0, false);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return counted_alloc(size, 0, false);
}
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(size, static_cast<std::size_t>(a), false);
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(size, static_cast<std::size_t>(a), false);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
