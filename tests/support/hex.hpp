#pragma once
// Hex conversion for exact-byte assertions and test vectors, shared by every test directory.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace corvid::test {

// "0a ff" style lower-case hex, one space between bytes.
inline std::string hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (i != 0) out += ' ';
    out += digits[b >> 4];
    out += digits[b & 0x0F];
  }
  return out;
}

// Inverse of hex(); spaces and newlines are ignored, so vectors can be grouped for readability.
// Throws std::invalid_argument on a malformed string (a typo in a test vector).
inline std::string unhex(std::string_view text) {
  std::string out;
  int high = -1;
  for (const char c : text) {
    if (c == ' ' || c == '\n') continue;
    const int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0)
      throw std::invalid_argument("unhex: not a hex digit in \"" + std::string(text) + "\"");
    if (high < 0) {
      high = v;
    } else {
      out += static_cast<char>((high << 4) | v);
      high = -1;
    }
  }
  if (high >= 0)
    throw std::invalid_argument("unhex: odd digit count in \"" + std::string(text) + "\"");
  return out;
}

}  // namespace corvid::test
