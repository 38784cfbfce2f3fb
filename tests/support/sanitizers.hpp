#pragma once
// Whether this binary runs under ASan or TSan: their shadow memory and quarantine make RSS
// figures meaningless, and their speed calls for smaller loads. (Time limits scale by
// slowdown.hpp instead.)
namespace corvid::test {

constexpr bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

}  // namespace corvid::test
