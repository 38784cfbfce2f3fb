#pragma once
// Unsigned LEB128 varints for lengths, element counts and variant indices: 7 bits per byte,
// least significant group first, high bit set on every byte but the last. Values are capped at
// UINT32_MAX, so a varint is 1..5 bytes; the decoder (reader::read_varint) enforces the cap and
// rejects non-minimal forms, so every value has exactly one encoding.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace corvid::codec {

inline constexpr std::size_t max_varint_size = 5;
inline constexpr std::uint32_t max_length = std::numeric_limits<std::uint32_t>::max();

// Bytes needed to encode v.
constexpr std::size_t varint_size(std::uint32_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Writes v at p (which has room for varint_size(v) bytes); returns the byte after it.
inline char* write_varint(char* p, std::uint32_t v) noexcept {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// A container size as a wire length. Sizes above UINT32_MAX have no encoding; that is a
// programming error on the sending side (not untrusted input), so it throws.
inline std::uint32_t length_prefix(std::size_t n) {
  if (n > max_length) throw std::length_error("corvid::codec: length exceeds UINT32_MAX");
  return static_cast<std::uint32_t>(n);
}

}  // namespace corvid::codec
