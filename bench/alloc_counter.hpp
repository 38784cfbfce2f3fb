#pragma once
// Counts heap allocations made on chosen threads (the server's reactors), so the benchmark
// can print allocations per call on the server path. The corvid-bench binary replaces the
// global operator new (tests/support/replaced_new.cpp), which asks alloc_counter.cpp.
#include <cstdint>

namespace corvid::bench {

// Allocations on the calling thread are counted from now on.
void track_this_thread() noexcept;
// Allocations counted so far on tracked threads.
std::uint64_t tracked_allocations() noexcept;

}  // namespace corvid::bench
