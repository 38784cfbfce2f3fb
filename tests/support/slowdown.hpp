#pragma once
// How much slower than a dev build on an idle machine the tests may run, and the time limits
// scaled by it. Time limits in tests are liveness bounds or margins for scheduling delays
// (something must happen eventually), never speed targets and never what corvid itself
// promises; sanitizer builds are several times slower, so those limits grow with this factor.
//
// One source: the compile definition CORVID_TEST_SLOWDOWN, which tests/support/CMakeLists.txt
// puts on corvid_test_support (PUBLIC, so every target linking it sees the same value): 4 in
// builds with -fsanitize=address or thread, 1 otherwise, `-DCORVID_TEST_SLOWDOWN=<f>` at
// configure time overrides it. A compile definition rather than an environment variable, so
// that a test binary run by hand scales its limits exactly as it does under ctest.
#include <chrono>

#ifndef CORVID_TEST_SLOWDOWN
#error "CORVID_TEST_SLOWDOWN is undefined: link the target with corvid_test_support"
#endif

namespace corvid::test {

inline constexpr double slowdown = CORVID_TEST_SLOWDOWN;
static_assert(slowdown >= 1.0, "CORVID_TEST_SLOWDOWN must be at least 1");

// A time limit t of a dev build, scaled for this build.
constexpr std::chrono::milliseconds patience(std::chrono::milliseconds t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double, std::milli>(t) * slowdown);
}

}  // namespace corvid::test
