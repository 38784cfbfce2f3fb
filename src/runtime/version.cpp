#include "corvid/version.hpp"

namespace corvid {

// CORVID_VERSION comes from the VERSION file, through src/CMakeLists.txt.
std::string_view version() noexcept { return CORVID_VERSION; }

}  // namespace corvid
