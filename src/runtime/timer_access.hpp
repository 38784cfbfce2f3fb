#pragma once
// The library's side of detail::timer_storage: makes the timer in place and reaches it.
#include <chrono>
#include <new>

#include "corvid/detail/timer_storage.hpp"

#include "asio_all.hpp"

namespace corvid::detail {

class timer_access {
 public:
  static_assert(sizeof(asio::steady_timer) <= sizeof(timer_storage::bytes_) &&
                    alignof(asio::steady_timer) <= alignof(timer_storage),
                "timer_storage is too small for this asio's steady_timer: enlarge bytes_");

  // Makes the timer (replacing any) on `ctx`, expiring `d` from now.
  static asio::steady_timer& emplace(timer_storage& s, asio::io_context& ctx,
                                     std::chrono::steady_clock::duration d) {
    destroy(s);
    auto* t = ::new (static_cast<void*>(s.bytes_)) asio::steady_timer(ctx, d);
    s.engaged_ = true;
    return *t;
  }
  static void destroy(timer_storage& s) noexcept {
    if (!s.engaged_) return;
    std::launder(reinterpret_cast<asio::steady_timer*>(s.bytes_))->~basic_waitable_timer();
    s.engaged_ = false;
  }
};

}  // namespace corvid::detail
