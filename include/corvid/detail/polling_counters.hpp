#pragma once
// What a reactor's adaptive polling loop counts, read by io_pool's accessors.
#include <atomic>
#include <cstdint>

namespace corvid::detail {

struct polling_counters {
  std::atomic<std::uint64_t> sleeps{0};  // went to sleep in the kernel
  std::atomic<std::uint64_t> held_sleeps{
      0};  // of those, without polling: held after polling stopped paying
  std::atomic<std::uint64_t> holds{0};  // times polling stopped for a while: it was not paying

  static void bump(std::atomic<std::uint64_t>& c) noexcept {  // only the reactor writes
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

}  // namespace corvid::detail
