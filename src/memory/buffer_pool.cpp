#include "corvid/memory/buffer_pool.hpp"

#include <bit>
#include <cstdlib>
#include <new>

#include "corvid/detail/buffer_memory.hpp"
#include "corvid/memory/memory_tracker.hpp"

#include "page_slab.hpp"

namespace corvid {
namespace {

// Index of the class of exactly `capacity` bytes or the largest class below it.
std::size_t class_below(std::size_t capacity) noexcept {
  return static_cast<std::size_t>(std::bit_width(capacity / buffer_pool::smallest_class)) - 1;
}

memory_tracker& thread_pools_tracker() {
  static memory_tracker t("buffer_pools", unlimited_memory, &memory_tracker::process());
  return t;
}

}  // namespace

buffer_pool::buffer_pool(std::size_t max_cached_bytes, memory_tracker* tracker) noexcept
    : max_cached_bytes_(max_cached_bytes), tracker_(tracker) {}

buffer_pool::~buffer_pool() { trim(); }

buffer_pool& buffer_pool::for_this_thread() {
  thread_local buffer_pool pool(4 * 1024 * 1024, &thread_pools_tracker());
  return pool;
}

std::size_t buffer_pool::class_size(std::size_t size) noexcept {
  if (size <= smallest_class) return smallest_class;
  if (size > largest_class) return size;
  return std::bit_ceil(size);
}

buffer_pool::block buffer_pool::acquire(std::size_t size) {
  const std::size_t capacity = class_size(size);
  if (capacity <= largest_class) {
    const std::size_t index = class_below(capacity);
    if (free_block* f = free_[index]) {
      free_[index] = f->next;
      cached_bytes_ -= capacity;
      if (tracker_ != nullptr) tracker_->release(capacity);
      ++hits_;
      return {reinterpret_cast<char*>(f), capacity};
    }
  }
  ++misses_;
  if constexpr (detail::slab_backs_buffer_pool) {
    if (capacity <= largest_class) {
      if (char* p = detail::page_slab::process().take(capacity)) return {p, capacity};
    }
  }
  return {detail::buffer_allocate(capacity), capacity};
}

void buffer_pool::release(block b) noexcept {
  if (b.data == nullptr) return;
  if (b.capacity < smallest_class || b.capacity > largest_class ||
      cached_bytes_ + b.capacity > max_cached_bytes_) {
    detail::buffer_free(b.data, b.capacity);
    return;
  }
  const std::size_t index = class_below(b.capacity);
  const std::size_t capacity = smallest_class << index;  // any excess rides along unused
  auto* f = reinterpret_cast<free_block*>(b.data);
  f->next = free_[index];
  free_[index] = f;
  cached_bytes_ += capacity;
  if (tracker_ != nullptr) tracker_->reserve(capacity);
}

void buffer_pool::trim() noexcept {
  for (std::size_t i = 0; i < class_count; ++i) {
    while (free_block* f = free_[i]) {
      free_[i] = f->next;
      detail::buffer_free(reinterpret_cast<char*>(f), smallest_class << i);
    }
  }
  if (tracker_ != nullptr) tracker_->release(cached_bytes_);
  cached_bytes_ = 0;
}

}  // namespace corvid
