#include "alloc_counter.hpp"

#include <atomic>

#include "replaced_new.hpp"

namespace corvid::bench {
namespace {
enum class side : unsigned char { none, server, client };
thread_local side tracked = side::none;
std::atomic<std::uint64_t> allocations{0};
std::atomic<std::uint64_t> client_allocs{0};
}  // namespace

void track_this_thread() noexcept { tracked = side::server; }
std::uint64_t tracked_allocations() noexcept { return allocations.load(std::memory_order_relaxed); }

void track_this_thread_as_client() noexcept { tracked = side::client; }
std::uint64_t client_allocations() noexcept {
  return client_allocs.load(std::memory_order_relaxed);
}

}  // namespace corvid::bench

bool corvid::test::on_operator_new(std::size_t) noexcept {
  using namespace corvid::bench;
  if (tracked == side::server) {
    allocations.fetch_add(1, std::memory_order_relaxed);
  } else if (tracked == side::client) {
    client_allocs.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}
