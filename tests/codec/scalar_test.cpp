// Fixed-width values: bool, every integer width, chars, enums, float, double.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace corvid::codec {
namespace {

using test::round_trip;
using test::to_hex;
using test::unhex;

enum class color : std::uint8_t { red = 1, green = 2 };
enum class big : std::int64_t { low = std::numeric_limits<std::int64_t>::min() };
enum class flag : bool { off = false, on = true };
enum legacy_fixed : std::uint16_t { legacy_a = 0x0102 };

TEST(Scalar, BoolIsOneByte) {
  EXPECT_EQ(to_hex(true), "01");
  EXPECT_EQ(to_hex(false), "00");
  EXPECT_TRUE(round_trip(true));
  EXPECT_FALSE(round_trip(false));
}

TEST(Scalar, BoolRejectsAnythingButZeroOrOne) {
  for (int b = 2; b < 256; ++b) {
    bool out = false;
    EXPECT_EQ(decode(std::string(1, static_cast<char>(b)), out), decode_errc::invalid_value) << b;
  }
  bool out = true;
  EXPECT_EQ(decode("", out), decode_errc::truncated);
}

TEST(Scalar, IntegersAreLittleEndianFixedWidth) {
  EXPECT_EQ(to_hex(std::int8_t{-1}), "ff");
  EXPECT_EQ(to_hex(std::uint8_t{0x7f}), "7f");
  EXPECT_EQ(to_hex(std::uint16_t{0x1234}), "34 12");
  EXPECT_EQ(to_hex(std::int16_t{-2}), "fe ff");
  EXPECT_EQ(to_hex(std::int32_t{-2}), "fe ff ff ff");
  EXPECT_EQ(to_hex(std::uint32_t{0x01020304}), "04 03 02 01");
  EXPECT_EQ(to_hex(std::int64_t{1}), "01 00 00 00 00 00 00 00");
  EXPECT_EQ(to_hex(std::uint64_t{0x0102030405060708}), "08 07 06 05 04 03 02 01");
}

template <class T>
class IntegerLimits : public ::testing::Test {};
using integer_types = ::testing::Types<char, signed char, unsigned char, char8_t, char16_t,
                                       char32_t, short, unsigned short, int, unsigned, long,
                                       unsigned long, long long, unsigned long long>;
TYPED_TEST_SUITE(IntegerLimits, integer_types);

TYPED_TEST(IntegerLimits, MinMaxZeroRoundTrip) {
  using T = TypeParam;
  for (const T v : {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T{0}, T{1}}) {
    EXPECT_EQ(test::to_bytes(v).size(), sizeof(T));
    EXPECT_EQ(round_trip(v), v);
  }
  // One byte short of a value is truncated, never a partial read.
  T out{};
  EXPECT_EQ(decode(std::string(sizeof(T) - 1, '\x01'), out), decode_errc::truncated);
  EXPECT_EQ(decode(std::string(sizeof(T) + 1, '\x01'), out), decode_errc::trailing_bytes);
}

TEST(Scalar, CharsAreTheirCodeUnits) {
  EXPECT_EQ(to_hex('A'), "41");
  EXPECT_EQ(to_hex(u8'z'), "7a");
  EXPECT_EQ(to_hex(u'\u20ac'), "ac 20");
  EXPECT_EQ(to_hex(U'\U0001F600'), "00 f6 01 00");
}

TEST(Scalar, EnumsUseTheirUnderlyingType) {
  EXPECT_EQ(to_hex(color::green), "02");
  EXPECT_EQ(to_hex(big::low), "00 00 00 00 00 00 00 80");
  EXPECT_EQ(to_hex(legacy_a), "02 01");
  EXPECT_EQ(to_hex(std::byte{0xAB}), "ab");
  EXPECT_EQ(round_trip(color::red), color::red);
  EXPECT_EQ(round_trip(big::low), big::low);
  EXPECT_EQ(round_trip(std::byte{0xAB}), std::byte{0xAB});
  // Any underlying value is a valid value of a fixed enum, named or not.
  color c{};
  ASSERT_EQ(decode(unhex("ff"), c), decode_errc::ok);
  EXPECT_EQ(static_cast<int>(c), 255);
}

TEST(Scalar, BoolEnumsAreValidatedLikeBool) {
  EXPECT_EQ(to_hex(flag::on), "01");
  EXPECT_EQ(round_trip(flag::on), flag::on);
  EXPECT_EQ(round_trip(flag::off), flag::off);
  flag f{};
  EXPECT_EQ(decode(unhex("02"), f), decode_errc::invalid_value);
}

TEST(Scalar, FloatsAreIeeeLittleEndian) {
  EXPECT_EQ(to_hex(1.0f), "00 00 80 3f");
  EXPECT_EQ(to_hex(-2.5), "00 00 00 00 00 00 04 c0");
  EXPECT_EQ(to_hex(0.5), "00 00 00 00 00 00 e0 3f");
}

TEST(Scalar, FloatSpecialValuesKeepTheirBits) {
  for (const double v :
       {0.0, -0.0, std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::denorm_min(),
        std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
        std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(round_trip(v)), std::bit_cast<std::uint64_t>(v));
  }
  // A NaN with a payload survives bit for bit.
  const auto payload_nan = std::bit_cast<float>(std::uint32_t{0x7fa00001});
  EXPECT_EQ(std::bit_cast<std::uint32_t>(round_trip(payload_nan)), 0x7fa00001u);
}

}  // namespace
}  // namespace corvid::codec
