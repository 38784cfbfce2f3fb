// Varints (lengths, counts, variant indices): sizes at every 7-bit boundary, exact bytes, and
// every way a hostile varint can be malformed.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace corvid::codec {
namespace {

using test::hex;
using test::unhex;

std::string varint_bytes(std::uint32_t v) {
  std::string out(varint_size(v), '\0');
  EXPECT_EQ(write_varint(out.data(), v), out.data() + out.size());
  return out;
}

decode_errc read(std::string_view bytes, std::uint32_t& out, std::size_t* left = nullptr) {
  const test::exact_copy copy(bytes);
  reader r(copy.view());
  const decode_errc ec = r.read_varint(out);
  if (left != nullptr) *left = r.remaining();
  return ec;
}

TEST(Varint, SizeAtEverySevenBitBoundary) {
  EXPECT_EQ(varint_size(0), 1u);
  EXPECT_EQ(varint_size(0x7F), 1u);
  EXPECT_EQ(varint_size(0x80), 2u);
  EXPECT_EQ(varint_size(0x3FFF), 2u);
  EXPECT_EQ(varint_size(0x4000), 3u);
  EXPECT_EQ(varint_size(0x1FFFFF), 3u);
  EXPECT_EQ(varint_size(0x200000), 4u);
  EXPECT_EQ(varint_size(0xFFFFFFF), 4u);
  EXPECT_EQ(varint_size(0x10000000), 5u);
  EXPECT_EQ(varint_size(std::numeric_limits<std::uint32_t>::max()), 5u);
}

TEST(Varint, ExactBytes) {
  EXPECT_EQ(hex(varint_bytes(0)), "00");
  EXPECT_EQ(hex(varint_bytes(1)), "01");
  EXPECT_EQ(hex(varint_bytes(127)), "7f");
  EXPECT_EQ(hex(varint_bytes(128)), "80 01");
  EXPECT_EQ(hex(varint_bytes(300)), "ac 02");
  EXPECT_EQ(hex(varint_bytes(16384)), "80 80 01");
  EXPECT_EQ(hex(varint_bytes(0xFFFFFFFF)), "ff ff ff ff 0f");
}

TEST(Varint, RoundTripsBoundariesAndSamples) {
  for (std::uint64_t v = 1; v <= 0xFFFFFFFF; v = v * 3 + 1) {
    for (const std::uint64_t w : {v - 1, v, v + 1}) {
      if (w > 0xFFFFFFFF) continue;
      const auto x = static_cast<std::uint32_t>(w);
      std::uint32_t got = 0;
      std::size_t left = 99;
      ASSERT_EQ(read(varint_bytes(x), got, &left), decode_errc::ok) << x;
      EXPECT_EQ(got, x);
      EXPECT_EQ(left, 0u);
    }
  }
  for (unsigned bits = 0; bits < 32; ++bits) {
    const std::uint32_t x = std::uint32_t{1} << bits;
    std::uint32_t got = 0;
    ASSERT_EQ(read(varint_bytes(x), got), decode_errc::ok);
    EXPECT_EQ(got, x);
  }
}

TEST(Varint, LeavesFollowingBytesUnread) {
  std::uint32_t got = 0;
  std::size_t left = 0;
  ASSERT_EQ(read(unhex("ac 02 ff"), got, &left), decode_errc::ok);
  EXPECT_EQ(got, 300u);
  EXPECT_EQ(left, 1u);
}

TEST(Varint, RejectsTruncation) {
  std::uint32_t got = 0;
  EXPECT_EQ(read("", got), decode_errc::truncated);
  EXPECT_EQ(read(unhex("80"), got), decode_errc::truncated);
  EXPECT_EQ(read(unhex("ff ff"), got), decode_errc::truncated);
  EXPECT_EQ(read(unhex("ff ff ff ff"), got), decode_errc::truncated);
}

TEST(Varint, RejectsOverLongAndTooLarge) {
  std::uint32_t got = 0;
  // A 5th byte with the continuation bit: the varint would be 6+ bytes.
  EXPECT_EQ(read(unhex("80 80 80 80 80 01"), got), decode_errc::length_overflow);
  EXPECT_EQ(read(unhex("ff ff ff ff ff ff ff ff ff ff"), got), decode_errc::length_overflow);
  // 5 bytes but above UINT32_MAX (bits 32+ set).
  EXPECT_EQ(read(unhex("ff ff ff ff 1f"), got), decode_errc::length_overflow);
  EXPECT_EQ(read(unhex("80 80 80 80 10"), got), decode_errc::length_overflow);
  EXPECT_EQ(read(unhex("80 80 80 80 7f"), got), decode_errc::length_overflow);
  // Over-long even when the input ends right after the 5th byte.
  EXPECT_EQ(read(unhex("80 80 80 80 80"), got), decode_errc::length_overflow);
}

TEST(Varint, RejectsNonMinimalForms) {
  std::uint32_t got = 0;
  EXPECT_EQ(read(unhex("80 00"), got), decode_errc::invalid_value);     // 0 in 2 bytes
  EXPECT_EQ(read(unhex("81 80 00"), got), decode_errc::invalid_value);  // 1 in 3 bytes
  EXPECT_EQ(read(unhex("ff ff ff ff 00"), got), decode_errc::invalid_value);
  EXPECT_EQ(read(unhex("00"), got), decode_errc::ok);  // a single zero byte is minimal
}

TEST(Varint, CountMustFitInWhatRemains) {
  const std::string bytes = unhex("03 aa bb cc");
  std::uint32_t n = 0;
  reader ok_reader(bytes);
  EXPECT_EQ(ok_reader.read_count(1, n), decode_errc::ok);
  EXPECT_EQ(n, 3u);
  reader too_big(bytes);
  EXPECT_EQ(too_big.read_count(2, n), decode_errc::length_overflow);  // 3 * 2 > 3
  reader zero_size(bytes);
  EXPECT_EQ(zero_size.read_count(0, n), decode_errc::ok);  // counted as 1 byte each
  const std::string four = unhex("04 aa bb cc");
  reader zero_size_too_many(four);
  EXPECT_EQ(zero_size_too_many.read_count(0, n), decode_errc::length_overflow);
}

TEST(Varint, LengthPrefixThrowsAboveUint32Max) {
  EXPECT_EQ(length_prefix(0xFFFFFFFF), 0xFFFFFFFFu);
  if constexpr (sizeof(std::size_t) > 4) {
    EXPECT_THROW(static_cast<void>(length_prefix(std::size_t{0xFFFFFFFF} + 1)), std::length_error);
  }
}

}  // namespace
}  // namespace corvid::codec
