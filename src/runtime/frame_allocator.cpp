#include "corvid/detail/frame_allocator.hpp"

#include <array>
#include <cstdlib>
#include <new>
#include <utility>

namespace corvid::detail {
namespace {

constexpr std::size_t granule = 64;
constexpr std::size_t class_count = 32;  // sizes up to 2 KiB are recycled
// A thread keeps at most this many free blocks per class, so memory freed on a thread that
// never allocates (frames created on one reactor and destroyed on another) cannot pile up.
constexpr std::size_t max_cached = 256;

struct free_block {
  free_block* next;
};

// Set once the thread's cache is destroyed (thread exit, static destruction). A separate,
// trivially destructible thread_local: a flag inside the cache could be optimised away as a
// dead store in its own destructor.
thread_local bool cache_dead = false;

struct thread_cache {
  std::array<free_block*, class_count> heads{};
  std::array<std::size_t, class_count> counts{};
  ~thread_cache() {
    cache_dead = true;
    for (auto*& head : heads) {
      while (head != nullptr) std::free(std::exchange(head, head->next));
    }
  }
};

thread_local thread_cache cache;

std::size_t class_of(std::size_t n) noexcept { return (n + granule - 1) / granule - 1; }

}  // namespace

void* frame_allocate(std::size_t n) {
  const std::size_t c = class_of(n);
  if (c < class_count) {
    if (!cache_dead) {
      if (free_block* b = cache.heads[c]) {
        cache.heads[c] = b->next;
        --cache.counts[c];
        return b;
      }
    }
    // Always the full class size: the block may be cached and reused for any size in the
    // class later, by whichever thread frees it.
    n = (c + 1) * granule;
  }
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void frame_deallocate(void* p, std::size_t n) noexcept {
  const std::size_t c = class_of(n);
  if (c < class_count && !cache_dead && cache.counts[c] < max_cached) {
    auto* b = static_cast<free_block*>(p);
    b->next = cache.heads[c];
    cache.heads[c] = b;
    ++cache.counts[c];
    return;
  }
  std::free(p);
}

}  // namespace corvid::detail
