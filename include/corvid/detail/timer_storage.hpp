#pragma once
// Room for one asio::steady_timer inside a public awaiter (sleep_for, request_context's
// sleep_for), so that their headers, and every user translation unit, need not include asio's
// timer: only src/ makes and uses the timer (src/runtime/timer_access.hpp), which checks at
// compile time that it fits. In place, not on the heap: a sleep allocates nothing of its own.
#include "corvid/export.hpp"

namespace corvid::detail {

class CORVID_API timer_storage {
 public:
  timer_storage() noexcept = default;
  timer_storage(const timer_storage&) = delete;
  timer_storage& operator=(const timer_storage&) = delete;
  ~timer_storage();  // destroys the timer, if one was made

 private:
  friend class timer_access;
  alignas(8) unsigned char bytes_[128];
  bool engaged_ = false;
};

}  // namespace corvid::detail
