#pragma once
// The replaceable global allocation functions ([new.delete]) of a binary that links the
// corvid_replaced_new object library: every form of operator new asks on_operator_new() first,
// then takes the memory from malloc (aligned_alloc for over-aligned types); every delete frees.
// For counting what a code path allocates, whatever container or allocator it goes through.
#include <cstddef>

namespace corvid::test {

// Defined once by the binary: told of each request before the memory is taken. False refuses
// it: std::bad_alloc from the throwing forms, null from the nothrow ones.
bool on_operator_new(std::size_t size) noexcept;

}  // namespace corvid::test
