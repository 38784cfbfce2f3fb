#pragma once
// Completion handlers whose asynchronous operations take their memory from the thread's
// frame_allocator free lists.
//
// Asio allocates each operation (a socket read or write, a post, a timer wait) through the
// handler's associated allocator. Its default recycles blocks in the io_context's per-thread
// information, which lives only as long as one run(), run_one() or poll() call: a reactor
// that polls (adaptive polling, busy-poll) makes one such call per batch of events, so an
// operation started in one batch and completed in another went back to the heap, and the
// next one came from operator new — two allocations per call on a polling reactor.
// recycling_allocator's lists belong to the thread and outlive those calls.
#include <type_traits>
#include <utility>

#include "corvid/detail/recycling_allocator.hpp"

namespace corvid::detail {

// `handler`, with recycling_allocator as its associated allocator (asio finds the nested
// allocator_type and get_allocator()).
template <class Handler>
class recycled_handler {
 public:
  using allocator_type = recycling_allocator<void>;

  explicit recycled_handler(Handler h) noexcept(std::is_nothrow_move_constructible_v<Handler>)
      : handler_(std::move(h)) {}
  allocator_type get_allocator() const noexcept { return {}; }
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    return handler_(std::forward<Args>(args)...);
  }

 private:
  Handler handler_;
};

template <class Handler>
recycled_handler<std::decay_t<Handler>> recycled(Handler&& h) {
  return recycled_handler<std::decay_t<Handler>>(std::forward<Handler>(h));
}

}  // namespace corvid::detail
