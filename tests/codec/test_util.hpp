#pragma once
// Helpers shared by the codec tests: hex conversion (tests/support/hex.hpp), encode-to-string,
// round trips, and exactly-sized input copies (so ASan flags any read past the end).
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "corvid/codec/codec.hpp"

#include "hex.hpp"

namespace corvid::codec::test {

// hex() and unhex() are the shared ones (tests/support/hex.hpp).
using corvid::test::hex;
using corvid::test::unhex;

template <class T>
std::string to_bytes(const T& value) {
  std::string out;
  string_sink sink(out);
  encode(sink, value);
  return out;
}

template <class T>
std::string to_hex(const T& value) {
  return hex(to_bytes(value));
}

// A heap copy of exactly bytes.size() bytes: unlike std::string there is no slack after the end,
// so AddressSanitizer reports any out-of-bounds read by the decoder.
class exact_copy {
 public:
  explicit exact_copy(std::string_view bytes)
      : data_(new char[bytes.size()]), size_(bytes.size()) {  // new char[0] is valid too
    if (size_ != 0) std::memcpy(data_.get(), bytes.data(), size_);
  }
  std::string_view view() const noexcept { return {data_.get(), size_}; }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_;
};

// Decodes bytes (from an exact-size copy) into a fresh T.
template <class T>
decode_errc decode_exact(std::string_view bytes, T& out) {
  const exact_copy copy(bytes);
  return decode(copy.view(), out);
}

// A std::allocator that records the largest single allocation, to prove the decoder never
// sizes a container from a count it has not checked against the input.
struct allocation_stats {
  std::size_t largest_bytes = 0;
  std::size_t allocations = 0;
};
inline allocation_stats g_allocation_stats;

template <class T>
struct counting_allocator {
  using value_type = T;
  counting_allocator() = default;
  template <class U>
  counting_allocator(const counting_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    ++g_allocation_stats.allocations;
    if (bytes > g_allocation_stats.largest_bytes) g_allocation_stats.largest_bytes = bytes;
    return std::allocator<T>{}.allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }
  friend bool operator==(const counting_allocator&, const counting_allocator&) = default;
};

// Encodes value, checks encoded_size, decodes it back and returns the result. Re-encoding the
// result must give the same bytes, except that unordered containers may iterate differently.
enum class order { same, unordered };
template <class T>
owning_t<T> round_trip(const T& value, order o = order::same) {
  const std::string bytes = to_bytes(value);
  EXPECT_EQ(encoded_size(value), bytes.size());
  owning_t<T> out{};
  EXPECT_EQ(decode(bytes, out), decode_errc::ok);
  if (o == order::same) {
    EXPECT_EQ(to_bytes(out), bytes);
  } else {
    EXPECT_EQ(encoded_size(out), bytes.size());
  }
  return out;
}

}  // namespace corvid::codec::test
