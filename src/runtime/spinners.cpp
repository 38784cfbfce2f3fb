#include "spinners.hpp"

#include <atomic>
#include <sched.h>

namespace corvid::detail {
namespace {

// 0 = free, 1 = claimed but not spinning, cpu + 2 = spinning on that CPU. More spinning
// reactors than slots in one process would mean more spinners than any machine's cores.
constexpr std::size_t slot_count = 256;
constexpr std::size_t no_slot = slot_count;
std::atomic<int> slots[slot_count];
std::atomic<std::size_t> slots_used{0};  // high-water mark: scans stop there

}  // namespace

spinner_slot::spinner_slot() noexcept : index_(no_slot) {
  for (std::size_t i = 0; i < slot_count; ++i) {
    int expected = 0;
    if (slots[i].compare_exchange_strong(expected, 1)) {
      index_ = i;
      std::size_t used = slots_used.load();
      while (used < i + 1 && !slots_used.compare_exchange_weak(used, i + 1)) {
      }
      return;
    }
  }
}

spinner_slot::~spinner_slot() {
  if (index_ != no_slot) slots[index_].store(0);
}

bool spinner_slot::shares_core() noexcept {
  if (index_ == no_slot) return false;
  const int cpu = ::sched_getcpu();
  if (cpu < 0) return false;
  const int mine = cpu + 2;
  slots[index_].store(mine, std::memory_order_relaxed);
  const std::size_t used = slots_used.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < used; ++i) {
    const int v = slots[i].load(std::memory_order_relaxed);
    if (v == 0) continue;
    if (i != index_ && v == mine) return true;
  }
  return false;
}

void spinner_slot::pause() noexcept {
  if (index_ != no_slot) slots[index_].store(1, std::memory_order_relaxed);
}

}  // namespace corvid::detail
