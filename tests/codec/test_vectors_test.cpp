// Protocol test vectors: the worked examples of docs/codec.md, byte for byte. These bytes are the
// wire contract with every other corvid implementation; change them only with the protocol
// version, and update docs/codec.md in the same change.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace corvid::codec {
namespace {

using test::to_hex;
using test::unhex;

enum class color : std::uint8_t { red = 1, green = 2 };

struct point {
  int x;
  double y;
  std::string tag;
  std::vector<int> v;
  bool operator==(const point&) const = default;
};

struct request {
  std::uint32_t id;
  std::string method;
  std::optional<std::vector<std::uint8_t>> payload;
  bool operator==(const request&) const = default;
};

struct point3f {
  using codec_layout = frozen;
  float x, y, z;
  bool operator==(const point3f&) const = default;
};

// Two versions of one struct: v2 appended a field.
struct user_v1 {
  std::uint32_t id;
  std::string name;
  bool operator==(const user_v1&) const = default;
};
struct user_v2 {
  std::uint32_t id;
  std::string name;
  std::uint8_t age = 18;
  bool operator==(const user_v2&) const = default;
};

enum class shape : std::uint8_t { circle = 0, square = 1 };
constexpr auto corvid_enum_values(shape) { return std::array{shape::circle, shape::square}; }

// Checks both directions: value -> bytes, and bytes -> the same value. Extra spaces in
// expected_hex only group bytes for the reader.
template <class T>
void expect_vector(const T& value, std::string_view expected_hex) {
  EXPECT_EQ(to_hex(value), test::hex(unhex(expected_hex)));
  T decoded{};
  ASSERT_EQ(decode(unhex(expected_hex), decoded), decode_errc::ok) << expected_hex;
  EXPECT_EQ(decoded, value) << expected_hex;
}

TEST(TestVectors, Scalars) {
  expect_vector(true, "01");
  expect_vector(false, "00");
  expect_vector(std::uint8_t{200}, "c8");
  expect_vector(std::uint16_t{0x1234}, "34 12");
  expect_vector(std::int32_t{-2}, "fe ff ff ff");
  expect_vector(std::int64_t{1}, "01 00 00 00 00 00 00 00");
  expect_vector(1.0f, "00 00 80 3f");
  expect_vector(-2.5, "00 00 00 00 00 00 04 c0");
  expect_vector(color::green, "02");
}

TEST(TestVectors, Strings) {
  expect_vector(std::string(), "00");
  expect_vector(std::string("hi"), "02 68 69");
  expect_vector(std::string(300, 'a'), "ac 02 " + test::hex(std::string(300, 'a')));
}

TEST(TestVectors, Sequences) {
  expect_vector(std::vector<std::uint16_t>{1, 2, 3}, "03 01 00 02 00 03 00");
  expect_vector(std::vector<bool>{true, false, true}, "03 01 00 01");
  expect_vector(std::vector<std::string>{"a", ""}, "02 01 61 00");
  expect_vector(std::array<std::int8_t, 3>{1, -1, 2}, "01 ff 02");
  expect_vector(std::map<std::string, std::uint8_t>{{"a", 1}, {"b", 2}}, "02 01 61 01 01 62 02");
  expect_vector(std::set<std::uint8_t>{3, 1}, "02 01 03");
}

TEST(TestVectors, SumTypes) {
  expect_vector(std::optional<std::uint32_t>{}, "00");
  expect_vector(std::optional<std::uint32_t>{5}, "01 05 00 00 00");
  using v = std::variant<std::monostate, std::int32_t, std::string>;
  expect_vector(v{}, "00");
  expect_vector(v{7}, "01 07 00 00 00");
  expect_vector(v{std::string("x")}, "02 01 78");
}

TEST(TestVectors, Products) {
  expect_vector(std::tuple<std::uint8_t, std::string, bool>{7, "ab", true}, "07 02 61 62 01");
  expect_vector(std::pair<std::uint8_t, std::uint16_t>{1, 2}, "01 02 00");
  expect_vector(point{1, 0.5, "p", {2}},
                "13  01 00 00 00  00 00 00 00 00 00 e0 3f  01 70  01 02 00 00 00");
  expect_vector(request{42, "add", std::vector<std::uint8_t>{1, 2}},
                "0c  2a 00 00 00  03 61 64 64  01 02 01 02");
  expect_vector(point3f{1, 2, 0}, "00 00 80 3f  00 00 00 40  00 00 00 00");
}

TEST(TestVectors, Evolution) {
  expect_vector(user_v1{7, "al"}, "07  07 00 00 00  02 61 6c");
  expect_vector(user_v2{7, "al", 30}, "08  07 00 00 00  02 61 6c  1e");
  // Old bytes, new reader: the missing field takes its default.
  user_v2 newer{};
  ASSERT_EQ(decode(unhex("07  07 00 00 00  02 61 6c"), newer), decode_errc::ok);
  EXPECT_EQ(newer, (user_v2{7, "al", 18}));
  // New bytes, old reader: the unknown field is skipped.
  user_v1 older{};
  ASSERT_EQ(decode(unhex("08  07 00 00 00  02 61 6c  1e"), older), decode_errc::ok);
  EXPECT_EQ(older, (user_v1{7, "al"}));
}

TEST(TestVectors, UnknownAlternatives) {
  expect_vector(shape::square, "01");
  shape s{};
  EXPECT_EQ(decode(unhex("02"), s), decode_errc::unknown_alternative);
  std::variant<std::monostate, std::int32_t, std::string> v;
  EXPECT_EQ(decode(unhex("03 00"), v), decode_errc::unknown_alternative);
}

TEST(TestVectors, EncodeAllIsConcatenation) {
  std::string out;
  string_sink sink(out);
  encode_all(sink, std::uint8_t{1}, std::string("ok"));
  EXPECT_EQ(test::hex(out), "01 02 6f 6b");
}

}  // namespace
}  // namespace corvid::codec
