#pragma once
// What a load_balancer's calls read: one published set of endpoints. A view never changes
// once published; membership changes build a new one (its ring included) under the
// balancer's mutex, off the call path, and swap it in. Calls that loaded the old view keep
// it, and so its nodes and their pools, until they end.
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "corvid/client/load_balancer.hpp"
#include "corvid/detail/asio.hpp"

#include "hash_ring.hpp"

namespace corvid {

struct load_balancer::view {
  std::vector<std::shared_ptr<node>> nodes;  // sorted by instance id
  detail::hash_ring ring;                    // consistent_hash only; owners index `nodes`
  // Nonzero: the last update removed every endpoint; these are kept until then.
  steady::time_point hold_until{};
};

// Each reactor of the client's io_pool holds the view through a reference count of its own
// (an aliasing shared_ptr over one holder per reactor and view), renewed on that reactor when
// the generation moves on: a call copies its reactor's hold, so calls on different reactors
// neither lock nor touch a shared count. Each publish posts a reset to every reactor, so a
// reactor that makes no more calls does not keep a replaced view (and its pools) alive.
struct load_balancer::reactor_views {
  struct alignas(64) hold {
    std::shared_ptr<const view> v;  // only ever touched on its reactor, as are the others
    std::uint64_t generation = 0;
  };
  std::vector<asio::io_context*> reactors;
  std::unique_ptr<hold[]> holds;  // one per reactor
};

// The published pointer is read and swapped under a lock of its own (one of a few shared by
// all balancers), held for the pointer copy alone, never while a view is built: libstdc++
// 12's std::atomic<std::shared_ptr> guards itself with a spin bit and fences that
// ThreadSanitizer cannot follow, so the lock makes the order visible to it too.
std::mutex& view_lock(const void* balancer) noexcept;

template <class Atomic>
auto locked_load(const Atomic& published, const void* balancer) {
  std::lock_guard lk(view_lock(balancer));
  return published.load(std::memory_order_acquire);
}

// The view it replaces is let go after the lock (its nodes and pools may go with it).
template <class Atomic, class Value>
void locked_store(Atomic& published, Value v, const void* balancer) {
  auto old = [&] {
    std::lock_guard lk(view_lock(balancer));
    return published.exchange(std::move(v), std::memory_order_acq_rel);
  }();
}

}  // namespace corvid
