#pragma once
// The version of the corvid library a program runs with (for a shared library: the one loaded
// at run time, which may be newer than the headers it was built against; the SONAME keeps it
// compatible). One place sets it: the VERSION file at the top of the source tree.
#include <string_view>

#include "corvid/export.hpp"

namespace corvid {

// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
CORVID_API std::string_view version() noexcept;

}  // namespace corvid
