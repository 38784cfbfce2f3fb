#pragma once
// The coroutine calls running on one connection, indexed by request id: a cancel frame finds
// its call in O(1) whatever the number running, and a request reusing the id of a call still
// running is detected. An open-addressing table of context pointers (linear probing,
// backward-shift deletion, no tombstones) that grows by doubling and never shrinks while the
// connection lives, so steady-state calls allocate nothing. Reactor thread only.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace corvid {
class request_context;
}

namespace corvid::detail {

class running_calls {
 public:
  // Makes room for one more insert, so that insert() allocates nothing (it may run where an
  // exception cannot be handled).
  void reserve_one() {
    if ((size_ + 1) * 2 > slots_.size()) grow();
  }
  // False (and nothing inserted) when a call with the same request id is running.
  bool insert(request_context* ctx) noexcept;
  void erase(request_context* ctx) noexcept;
  request_context* find(std::uint64_t request_id) const noexcept {
    return size_ == 0 ? nullptr : slots_[slot_of(request_id)];
  }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // Calls f(ctx) for every running call; f must not insert or erase.
  template <class F>
  void for_each(F&& f) const {
    for (request_context* c : slots_) {
      if (c != nullptr) f(c);
    }
  }

 private:
  std::size_t home(std::uint64_t id) const noexcept;
  std::size_t slot_of(std::uint64_t id) const noexcept;  // its slot, or an empty one
  void grow();

  std::vector<request_context*> slots_;  // size a power of two, at most half full
  std::size_t size_ = 0;
};

}  // namespace corvid::detail
