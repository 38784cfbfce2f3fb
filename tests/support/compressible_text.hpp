#pragma once
// JSON-like text that zstd shrinks several-fold: the payload the compression tests send.
#include <cstddef>
#include <string>

namespace corvid::test {

// `n` bytes of a repeated JSON record with a counter in it.
inline std::string json_like(std::size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i)
    s += "{\"id\":" + std::to_string(i) + ",\"name\":\"item\",\"tags\":[\"a\",\"b\"]},";
  s.resize(n);
  return s;
}

}  // namespace corvid::test
