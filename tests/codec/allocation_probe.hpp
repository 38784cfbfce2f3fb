#pragma once
// The allocation probe of codec_budget_test: that binary replaces the global operator new
// (tests/support/replaced_new.cpp, which asks allocation_probe.cpp) so a test can count what
// operator new was asked for between probe_arm() and probe_disarm(), whatever container or
// allocator path the decoder takes.
//
// While armed, a region that asks for more than probe_guard_bytes in total is refused with
// std::bad_alloc, so a decoder that ignores its budget fails the test at once instead of taking
// a gigabyte of a shared machine. Single-threaded use only, as in gtest's test bodies.
#include <cstddef>

namespace corvid::codec::test {

inline constexpr std::size_t probe_guard_bytes = std::size_t{64} << 20;

struct probe_counts {
  std::size_t bytes = 0;  // requested from operator new (any form) while armed
  std::size_t count = 0;
  bool refused = false;  // the guard fired
};

void probe_arm() noexcept;
probe_counts probe_disarm() noexcept;

}  // namespace corvid::codec::test
