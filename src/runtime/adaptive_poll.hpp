#pragma once
// How long an idle reactor polls before it sleeps, learned from how long it has been waiting
// for its events, like the Linux haltpoll cpuidle governor. A reactor that sleeps pays a
// thread wake-up (tens of µs on a VM) when its next event arrives; when events keep arriving
// within `max` of the reactor going idle (a ping-pong of calls on one connection), polling
// for them instead removes that wake-up from every round trip. When they stop (the gap is
// longer than `max`), polling could not have caught them: the budget halves, down to zero,
// so an idle reactor sleeps as it did before. The spin it wastes is at most `max` per gap.
#include <algorithm>
#include <chrono>
#include <cstdint>

namespace corvid::detail {

class adaptive_poll {
 public:
  explicit adaptive_poll(std::chrono::nanoseconds max) noexcept
      : max_ns_(std::max<std::int64_t>(0, max.count())), start_ns_(max_ns_ / 8) {}

  std::chrono::nanoseconds budget() const noexcept { return std::chrono::nanoseconds(poll_ns_); }

  // The reactor found no event while polling for budget() and slept; `waited` is the time from
  // going idle to its next event, its own work excluded.
  void slept(std::chrono::nanoseconds waited) noexcept {
    if (waited.count() <= max_ns_) {
      // Polling up to `max` would have caught it: poll longer next time.
      poll_ns_ = poll_ns_ == 0 ? start_ns_ : std::min(poll_ns_ * 2, max_ns_);
    } else {
      poll_ns_ /= 2;
      if (poll_ns_ < start_ns_) poll_ns_ = 0;
    }
  }

 private:
  std::int64_t max_ns_;
  std::int64_t start_ns_;  // the first budget after a quick wake-up
  std::int64_t poll_ns_ = 0;
};

}  // namespace corvid::detail
