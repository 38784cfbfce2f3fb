#pragma once
// How long an idle reactor polls before it sleeps, learned from how long it has been waiting
// for its events, like the Linux haltpoll cpuidle governor. A reactor that sleeps pays a
// thread wake-up (tens of µs on a VM) when its next event arrives; when events keep arriving
// within `max` of the reactor going idle (a ping-pong of calls on one connection), polling
// for them instead removes that wake-up from every round trip. When they stop (the gap is
// longer than `max`), polling could not have caught them: the budget halves, down to zero,
// so an idle reactor sleeps as it did before. The spin it wastes is at most `max` per gap.
//
// Polling pays only while the event can come while the poller holds its CPU. Two ways it
// cannot, both seen on this 2-core VM with other work running:
// - the peer that sends the event runs on the poller's CPU (under load the scheduler puts a
//   ping-pong pair on one CPU): it runs only once the poll ends, so every poll misses, and
//   128 B calls at c=1 took 67 µs at P50 with both sides polling against 8.6 µs on two CPUs;
// - other threads want the CPU (a busy host, a cgroup quota running out): the scheduler takes
//   it from the poller, which spends its turns spinning and loses the wake-up preference the
//   scheduler gives a sleeper.
// So a poll that loses its CPU (preempted()), or `max_misses` polls in a row that catch
// nothing (missed()), stop polling for a hold of 1 ms, doubling while it keeps happening, up to
// 1 s; a poll that catches its event (caught()) halves the next hold.
#include <algorithm>
#include <chrono>
#include <cstdint>

namespace corvid::detail {

class adaptive_poll {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // A pause between two empty polls longer than this means the thread was off its CPU: an
  // empty poll takes well under a microsecond.
  static constexpr std::chrono::microseconds lost_cpu_gap{50};
  static constexpr std::chrono::nanoseconds min_hold{std::chrono::milliseconds(1)};
  static constexpr std::chrono::nanoseconds max_hold{std::chrono::seconds(1)};
  static constexpr int max_misses = 8;

  explicit adaptive_poll(std::chrono::nanoseconds max) noexcept
      : max_ns_(std::max<std::int64_t>(0, max.count())), start_ns_(max_ns_ / 8) {}

  // The budget learned from the waits.
  std::chrono::nanoseconds budget() const noexcept { return std::chrono::nanoseconds(poll_ns_); }
  // What to poll for before sleeping, going idle at `now`: zero while held after preemption.
  std::chrono::nanoseconds budget(time_point now) const noexcept {
    return held(now) ? std::chrono::nanoseconds::zero() : budget();
  }
  bool held(time_point now) const noexcept { return now < hold_until_; }

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

  // The thread lost its CPU while polling (at `now`): no polling for the hold.
  void preempted(time_point now) noexcept {
    misses_ = 0;
    hold_ = hold_ == hold_.zero() ? min_hold : std::min(hold_ * 2, max_hold);
    hold_until_ = now + hold_;
  }
  // A poll ended at `now` without its event.
  void missed(time_point now) noexcept {
    if (++misses_ >= max_misses) preempted(now);
  }
  // A poll caught its event: polling pays, shorten the next hold.
  void caught() noexcept {
    misses_ = 0;
    hold_ /= 2;
    if (hold_ < min_hold) hold_ = hold_.zero();
  }

 private:
  std::int64_t max_ns_;
  std::int64_t start_ns_;  // the first budget after a quick wake-up
  std::int64_t poll_ns_ = 0;
  std::chrono::nanoseconds hold_{0};  // the last hold, to double
  time_point hold_until_{};
  int misses_ = 0;  // polls in a row that caught nothing
};

}  // namespace corvid::detail
