#pragma once
// The process's spinning reactors and the CPU each is on, so a spinner can tell whether
// another spinner shares its core: then it yields while idle, since the reply it waits for
// may need that other spinner to run (two spinners on one core otherwise burn a whole time
// slice per hop: P50 423 µs instead of 19 µs, docs/benchmarks.md). A spinner alone on its
// core, or sharing it with unrelated work, never yields: each yield would hand that work a
// slice and leave the spinner without CPU (P50 of 8-12 ms measured that way).
#include <cstddef>

namespace corvid::detail {

class spinner_slot {
 public:
  spinner_slot() noexcept;  // claims a slot; none left = never shares (never yields)
  ~spinner_slot();
  spinner_slot(const spinner_slot&) = delete;
  spinner_slot& operator=(const spinner_slot&) = delete;

  // Records the current CPU; true if another spinning reactor was last seen on it.
  bool shares_core() noexcept;
  // Not spinning (about to sleep in the kernel): others stop counting this one.
  void pause() noexcept;

 private:
  std::size_t index_;
};

}  // namespace corvid::detail
