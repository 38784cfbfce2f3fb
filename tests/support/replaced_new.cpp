// In a translation unit of its own: where GCC can see operator new's body next to a delete
// that calls free(), it reports a false new/free mismatch (-Wmismatched-new-delete).
#include "replaced_new.hpp"

#include <cstdlib>
#include <new>

namespace {

void* allocate(std::size_t size, std::size_t align, bool may_throw) {
  if (!corvid::test::on_operator_new(size)) {
    if (may_throw) throw std::bad_alloc();
    return nullptr;
  }
  if (size == 0) size = 1;  // operator new(0) must still return a unique pointer
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(align, (size + align - 1) / align * align);
  if (p == nullptr && may_throw) throw std::bad_alloc();
  return p;
}

std::size_t alignment(std::align_val_t a) { return static_cast<std::size_t>(a); }

}  // namespace

void* operator new(std::size_t size) { return allocate(size, 0, true); }
void* operator new[](std::size_t size) { return allocate(size, 0, true); }
void* operator new(std::size_t size, std::align_val_t a) {
  return allocate(size, alignment(a), true);
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return allocate(size, alignment(a), true);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return allocate(size, 0, false);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return allocate(size, 0, false);
}
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(size, alignment(a), false);
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(size, alignment(a), false);
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
