#pragma once
// Counts heap allocations made on chosen threads (the server's reactors, and for some
// experiments the client's), so the benchmark can print allocations per call on each side.
// The corvid-bench binary replaces the global operator new (tests/support/replaced_new.cpp),
// which asks alloc_counter.cpp.
#include <cstdint>

namespace corvid::bench {

// Allocations on the calling thread are counted from now on (as the server's).
void track_this_thread() noexcept;
// Allocations counted so far on tracked threads.
std::uint64_t tracked_allocations() noexcept;

// The same for client threads, counted apart: allocations on the calling thread count as the
// client's from now on.
void track_this_thread_as_client() noexcept;
std::uint64_t client_allocations() noexcept;

}  // namespace corvid::bench
