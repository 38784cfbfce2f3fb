#pragma once
// reader: a bounds-checked cursor over untrusted input. Every read checks what remains first,
// so no decoder can touch a byte outside the input; views it returns point into the input.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "corvid/codec/errc.hpp"
#include "corvid/codec/varint.hpp"

namespace corvid::codec {

class reader {
 public:
  explicit reader(std::string_view bytes) noexcept
      : pos_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - pos_); }
  bool empty() const noexcept { return pos_ == end_; }
  // The unread bytes.
  std::string_view rest() const noexcept { return {pos_, remaining()}; }

  // Takes the next n bytes as a view into the input (zero-copy).
  decode_errc read_bytes(std::size_t n, std::string_view& out) noexcept {
    if (n > remaining()) return decode_errc::truncated;
    out = {pos_, n};
    pos_ += n;
    return decode_errc::ok;
  }

  // Copies sizeof(T) bytes into a trivially copyable T. Only for types where every byte pattern
  // is a valid value (integers, floats, enums with a non-bool fixed underlying type).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  decode_errc read_raw(T& out) noexcept {
    if (sizeof(T) > remaining()) return decode_errc::truncated;
    std::memcpy(&out, pos_, sizeof(T));
    pos_ += sizeof(T);
    return decode_errc::ok;
  }

  decode_errc read_byte(std::uint8_t& out) noexcept { return read_raw(out); }

  // An unsigned LEB128 varint of at most 5 bytes and at most UINT32_MAX, in minimal form.
  decode_errc read_varint(std::uint32_t& out) noexcept {
    std::uint32_t v = 0;
    for (unsigned i = 0; i < max_varint_size; ++i) {
      if (pos_ == end_) return decode_errc::truncated;
      const auto b = static_cast<std::uint8_t>(*pos_++);
      // The 5th byte carries bits 28..31 only: anything above 0x0F is either a 6th byte
      // (continuation) or a value past UINT32_MAX.
      if (i == max_varint_size - 1 && b > 0x0F) return decode_errc::length_overflow;
      v |= static_cast<std::uint32_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) {
        // A zero final group after the first byte means a shorter form existed.
        if (b == 0 && i != 0) return decode_errc::invalid_value;
        out = v;
        return decode_errc::ok;
      }
    }
    return decode_errc::length_overflow;  // unreachable: the 5th byte always ends the loop
  }

  // A count of elements that each encode to at least min_element_size bytes. Rejects counts that
  // cannot fit in what remains (a 0-byte element type counts as 1 byte), so callers may size a
  // container from the count without trusting it.
  decode_errc read_count(std::size_t min_element_size, std::uint32_t& out) noexcept {
    if (auto ec = read_varint(out); ec != decode_errc::ok) return ec;
    const std::size_t unit = min_element_size == 0 ? 1 : min_element_size;
    if (out > remaining() / unit) return decode_errc::length_overflow;
    return decode_errc::ok;
  }

 private:
  const char* pos_;
  const char* end_;
};

}  // namespace corvid::codec
