#include "page_slab.hpp"

#include <bit>

#include "corvid/detail/buffer_memory.hpp"

#include <sys/mman.h>

namespace corvid::detail {

pooled_range pooled_blocks;

namespace {

std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

// Index of `capacity` among the classes, or class_count if it is not exactly one.
std::size_t class_index(std::size_t capacity) noexcept {
  if (capacity < page_slab::smallest_class || !std::has_single_bit(capacity)) {
    return page_slab::class_count;
  }
  const auto i = static_cast<std::size_t>(std::countr_zero(capacity / page_slab::smallest_class));
  return i < page_slab::class_count ? i : page_slab::class_count;
}

}  // namespace

page_slab::page_slab(std::size_t bytes_per_class) noexcept
    : part_(round_up(bytes_per_class == 0 ? commit_step : bytes_per_class, commit_step)) {
  // PROT_NONE and MAP_NORESERVE: address space only, charged to no overcommit account until
  // a step of it is made writable.
  void* p = ::mmap(nullptr, part_ * class_count, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    part_ = 0;
    return;
  }
  begin_ = reinterpret_cast<std::uintptr_t>(p);
  end_ = begin_ + part_ * class_count;
  for (std::size_t i = 0; i < class_count; ++i) {
    parts_[i].next = parts_[i].committed = begin_ + i * part_;
    parts_[i].limit = begin_ + (i + 1) * part_;
  }
}

page_slab::~page_slab() {
  if (begin_ != 0) ::munmap(reinterpret_cast<void*>(begin_), end_ - begin_);
}

page_slab& page_slab::process() noexcept {
  // 8 GiB of address space per class (56 GiB in all, of the 128 TiB a process has); a system
  // that refuses that much gets 256 MiB per class, and one that refuses even that, malloc.
  static page_slab* const slab = [] {
    auto* s = new page_slab(std::size_t{8} << 30);
    if (s->begin_ == 0) {
      delete s;
      s = new page_slab(std::size_t{256} << 20);
    }
    pooled_blocks.end.store(s->end_, std::memory_order_relaxed);
    pooled_blocks.begin.store(s->begin_, std::memory_order_release);
    return s;
  }();
  return *slab;
}

char* page_slab::take(std::size_t capacity) noexcept {
  const std::size_t i = class_index(capacity);
  if (i == class_count || begin_ == 0) return nullptr;
  std::lock_guard lk(mutex_);
  part& c = parts_[i];
  if (!c.free.empty()) {
    char* p = c.free.back();
    c.free.pop_back();
    return p;
  }
  if (c.next + capacity > c.limit) return nullptr;
  if (c.next + capacity > c.committed) {
    const std::uintptr_t to = c.committed + round_up(c.next + capacity - c.committed, commit_step);
    if (::mprotect(reinterpret_cast<void*>(c.committed), to - c.committed,
                   PROT_READ | PROT_WRITE) != 0) {
      return nullptr;  // the system's commit limit: malloc may still have room
    }
    c.committed = to;
  }
  char* p = reinterpret_cast<char*>(c.next);
  c.next += capacity;
  return p;
}

void page_slab::give(char* p) noexcept {
  const std::size_t i = class_of(p);
  // The pages go back now; the next touch of the block maps fresh zero pages.
  ::madvise(p, smallest_class << i, MADV_DONTNEED);
  std::lock_guard lk(mutex_);
  try {
    parts_[i].free.push_back(p);
  } catch (...) {  // no memory for the list: the address is not reused, the pages are gone
  }
}

std::size_t page_slab::free_blocks() const {
  std::lock_guard lk(mutex_);
  std::size_t n = 0;
  for (const part& c : parts_) n += c.free.size();
  return n;
}

std::size_t page_slab::committed_bytes() const {
  std::lock_guard lk(mutex_);
  std::size_t n = 0;
  for (std::size_t i = 0; i < class_count; ++i) {
    n += parts_[i].committed - (begin_ + i * part_);
  }
  return n;
}

void return_pooled_block(char* p) noexcept { page_slab::process().give(p); }

}  // namespace corvid::detail
