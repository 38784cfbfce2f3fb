#pragma once
// A counter with one writer (the reactor that owns it) and any number of readers (a scrape
// on another thread). The writer's add is a relaxed load and store, a plain add on x86: no
// locked instruction, no cache line bouncing between reactors. Readers see a value that is
// at most a few updates old, which is all a scrape needs.
#include <atomic>
#include <cstdint>

namespace corvid::metrics {

class counter {
 public:
  void add(std::uint64_t n = 1) noexcept {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

}  // namespace corvid::metrics
