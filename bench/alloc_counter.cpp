#include "alloc_counter.hpp"

#include <atomic>

#include "replaced_new.hpp"

namespace corvid::bench {
namespace {
thread_local bool tracked = false;
std::atomic<std::uint64_t> allocations{0};
}  // namespace

void track_this_thread() noexcept { tracked = true; }
std::uint64_t tracked_allocations() noexcept { return allocations.load(std::memory_order_relaxed); }

}  // namespace corvid::bench

bool corvid::test::on_operator_new(std::size_t) noexcept {
  if (corvid::bench::tracked) corvid::bench::allocations.fetch_add(1, std::memory_order_relaxed);
  return true;
}
