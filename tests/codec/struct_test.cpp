// Aggregate structs via Boost.PFR: a byte length then the fields in declaration order (frozen
// structs: the fields alone), any nesting, with no macro or registration; padding-free
// arithmetic structs take the memcpy path. Evolution (missing and unknown trailing fields):
// evolution_test.cpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace corvid::codec {
namespace {

using test::round_trip;
using test::to_bytes;
using test::to_hex;
using test::unhex;

struct point {
  int x;
  double y;
  std::string tag;
  std::vector<int> v;
  bool operator==(const point&) const = default;
};

enum class level : std::uint8_t { low, high };

struct inner {
  std::uint16_t a = 0;
  std::optional<std::string> name;
  bool operator==(const inner&) const = default;
};

// One member of every supported kind.
struct everything {
  bool flag;
  char c;
  std::int8_t i8;
  std::uint16_t u16;
  std::int32_t i32;
  std::uint64_t u64;
  float f;
  double d;
  level lvl;
  std::byte b;
  std::string s;
  std::vector<int> vi;
  std::vector<bool> vb;
  std::vector<inner> vin;
  std::array<std::uint16_t, 3> arr;
  std::map<std::string, inner> m;
  std::unordered_map<int, std::string> um;
  std::set<int> st;
  std::unordered_set<std::string> us;
  std::optional<inner> opt;
  std::variant<std::monostate, int, inner> var;
  std::tuple<int, std::string, std::tuple<>> tup;
  std::pair<bool, double> pr;
  std::monostate ms;
  inner nested;
  bool operator==(const everything&) const = default;
};

everything sample_everything() {
  return everything{true,
                    'z',
                    -8,
                    0xBEEF,
                    -123456,
                    0xFFFFFFFFFFFFFFFFull,
                    1.5f,
                    -0.25,
                    level::high,
                    std::byte{0x5A},
                    "text",
                    {1, -2, 3},
                    {true, false},
                    {inner{1, "one"}, inner{2, std::nullopt}},
                    {7, 8, 9},
                    {{"k", inner{3, "three"}}, {"", inner{}}},
                    {{4, "four"}, {5, ""}},
                    {10, 20, 30},
                    {"x", "y"},
                    inner{6, "six"},
                    inner{7, "seven"},
                    {1, "t", {}},
                    {false, 2.0},
                    {},
                    inner{8, std::nullopt}};
}

TEST(Struct, ByteLengthThenFieldsInOrder) {
  EXPECT_EQ(to_hex(point{1, 0.5, "p", {2}}),
            "13 01 00 00 00 00 00 00 00 00 00 e0 3f 01 70 01 02 00 00 00");
  const point p{-7, 3.25, "tag", {1, 2, 3}};
  EXPECT_EQ(round_trip(p), p);
}

TEST(Struct, EveryMemberKindRoundTrips) {
  const everything e = sample_everything();
  EXPECT_EQ(round_trip(e, test::order::unordered), e);
  EXPECT_EQ(round_trip(everything{}, test::order::unordered), everything{});
}

TEST(Struct, NestedCombinations) {
  using deep =
      std::vector<std::map<std::string, std::optional<std::variant<int, std::vector<inner>>>>>;
  const deep d{{{"a", std::nullopt}, {"b", 5}}, {}, {{"c", std::vector<inner>{inner{1, "i"}}}}};
  EXPECT_EQ(round_trip(d), d);
  const std::vector<point> points{{1, 2, "a", {}}, {3, 4, "", {5, 6}}};
  EXPECT_EQ(round_trip(points), points);
  const std::optional<std::vector<everything>> many{{sample_everything(), everything{}}};
  EXPECT_EQ(round_trip(many, test::order::unordered), many);
}

struct rgb {
  using codec_layout = frozen;
  std::uint8_t r, g, b;
  bool operator==(const rgb&) const = default;
};
struct vec3 {
  using codec_layout = frozen;
  float x, y, z;
  bool operator==(const vec3&) const = default;
};
struct padded {
  using codec_layout = frozen;
  std::uint8_t a;
  std::uint32_t b;
  bool operator==(const padded&) const = default;
};
// The evolvable twins of rgb and padded.
struct rgb_evolvable {
  std::uint8_t r, g, b;
  bool operator==(const rgb_evolvable&) const = default;
};
struct padded_evolvable {
  std::uint8_t a;
  std::uint32_t b;
  bool operator==(const padded_evolvable&) const = default;
};
// Frozen without editing the type.
struct external_pair {
  std::uint16_t a, b;
};

}  // namespace
template <>
inline constexpr bool enable_frozen_layout<external_pair> = true;
namespace {

TEST(Struct, FrozenStructsHaveNoPrefix) {
  static_assert(!detail::is_evolvable_v<rgb> && detail::is_evolvable_v<rgb_evolvable>);
  EXPECT_EQ(to_hex(rgb{1, 2, 3}), "01 02 03");
  EXPECT_EQ(to_hex(rgb_evolvable{1, 2, 3}), "03 01 02 03");
  EXPECT_EQ(to_hex(external_pair{1, 2}), "01 00 02 00");
  EXPECT_EQ(to_hex(padded_evolvable{1, 2}), "05 01 02 00 00 00");
  static_assert(detail::fixed_encoded_size_v<rgb> == 3);
  static_assert(detail::fixed_encoded_size_v<rgb_evolvable> == 4);
  static_assert(detail::min_encoded_size_v<rgb> == 3);
  static_assert(detail::min_encoded_size_v<rgb_evolvable> == 1);  // an older peer's: no fields
  EXPECT_EQ(round_trip(rgb_evolvable{4, 5, 6}), (rgb_evolvable{4, 5, 6}));
  EXPECT_EQ(round_trip(padded_evolvable{7, 8}), (padded_evolvable{7, 8}));
}

TEST(Struct, PaddingFreeArithmeticStructsAreBulk) {
  static_assert(detail::is_bulk_v<rgb> && detail::is_bulk_v<vec3>);
  static_assert(!detail::is_bulk_v<padded>);  // 3 padding bytes: encoded field by field
  // Evolvable: not bulk as a whole (the length comes first), but the fields are one memcpy.
  static_assert(!detail::is_bulk_v<rgb_evolvable> && detail::bulk_body_v<rgb_evolvable>);
  static_assert(!detail::bulk_body_v<padded_evolvable>);
  EXPECT_EQ(to_hex(std::vector<rgb>{{1, 2, 3}, {4, 5, 6}}), "02 01 02 03 04 05 06");
  EXPECT_EQ(to_hex(std::vector<rgb_evolvable>{{1, 2, 3}, {4, 5, 6}}), "02 03 01 02 03 03 04 05 06");
  EXPECT_EQ(to_hex(padded{1, 2}), "01 02 00 00 00");
  EXPECT_EQ(to_hex(std::vector<padded>{{1, 2}}), "01 01 02 00 00 00");
  const std::vector<vec3> v{{1, 2, 3}, {-1, 0.5f, 1e30f}};
  EXPECT_EQ(round_trip(v), v);
  const std::array<padded, 2> ps{padded{1, 2}, padded{3, 4}};
  EXPECT_EQ(round_trip(ps), ps);
  // A frozen struct has the same bytes as the tuple of its fields.
  EXPECT_EQ(to_bytes(vec3{1, 2, 3}), to_bytes(std::tuple<float, float, float>{1, 2, 3}));
}

struct empty {};
struct holder {
  empty e;
  std::uint8_t x;
  std::tuple<> t;
};

struct frozen_empty {
  using codec_layout = frozen;
};
struct frozen_holder {
  using codec_layout = frozen;
  frozen_empty e;
  std::uint8_t x;
  std::tuple<> t;
};

// An evolvable empty struct is a zero length (it may gain fields); a frozen one is nothing.
TEST(Struct, EmptyStructs) {
  EXPECT_EQ(to_hex(empty{}), "00");
  EXPECT_EQ(to_hex(holder{{}, 9, {}}), "02 00 09");
  holder h{};
  ASSERT_EQ(decode(unhex("02 00 09"), h), decode_errc::ok);
  EXPECT_EQ(h.x, 9);
  EXPECT_EQ(to_hex(frozen_empty{}), "");
  EXPECT_EQ(to_hex(frozen_holder{{}, 9, {}}), "09");
  frozen_holder f{};
  ASSERT_EQ(decode(unhex("09"), f), decode_errc::ok);
  EXPECT_EQ(f.x, 9);
}

// Members that view the input: decoding them is zero-copy.
struct view_message {
  std::uint32_t id;
  std::string_view name;
  std::span<const std::byte> payload;
  std::vector<std::string_view> tags;
};

TEST(Struct, ViewMembersPointIntoTheInput) {
  const std::string name = "add";
  const std::byte raw[] = {std::byte{1}, std::byte{2}};
  const view_message in{42, name, raw, {"a", "bc"}};
  const std::string bytes = to_bytes(in);
  EXPECT_EQ(test::hex(bytes), "11 2a 00 00 00 03 61 64 64 02 01 02 02 01 61 02 62 63");
  view_message out{};
  ASSERT_EQ(decode(bytes, out), decode_errc::ok);
  EXPECT_EQ(out.id, 42u);
  EXPECT_EQ(out.name.data(), bytes.data() + 6);
  EXPECT_EQ(static_cast<const void*>(out.payload.data()), bytes.data() + 10);
  ASSERT_EQ(out.tags.size(), 2u);
  EXPECT_EQ(out.tags[1].data(), bytes.data() + 16);
  EXPECT_EQ(out.tags[1], "bc");
}

struct with_const {
  const std::uint8_t id;
  std::string s;
};

TEST(Struct, ConstMembersEncodeButDoNotDecode) {
  static_assert(encodable<with_const> && !decodable<with_const>);
  EXPECT_EQ(to_hex(with_const{1, "a"}), "03 01 01 61");
}

// Boost.PFR sees a reference member as the object it refers to, so such a struct behaves like
// std::tie: the referred-to values are encoded, and decoding writes through the references.
struct refs {
  std::int64_t& n;
};
struct refs2 {
  std::int64_t& n;
  std::string& s;
};

TEST(Struct, ReferenceMembersEncodeTheReferredValues) {
  static_assert(!detail::is_bulk_v<refs>);  // memcpy would copy the address
  std::int64_t n = 7;
  std::string s = "ab";
  EXPECT_EQ(to_hex(refs{n}), "08 07 00 00 00 00 00 00 00");
  EXPECT_EQ(encoded_size(refs{n}), 9u);
  const std::string bytes = to_bytes(refs2{n, s});
  EXPECT_EQ(test::hex(bytes), "0b 07 00 00 00 00 00 00 00 02 61 62");
  std::int64_t n2 = 0;
  std::string s2;
  refs2 target{n2, s2};
  ASSERT_EQ(decode(bytes, target), decode_errc::ok);
  EXPECT_EQ(n2, 7);
  EXPECT_EQ(s2, "ab");
  // A reference has no default to fall back on: a missing field is an error.
  refs2 short_target{n2, s2};
  EXPECT_EQ(decode(unhex("08 07 00 00 00 00 00 00 00"), short_target), decode_errc::truncated);
}

// GCC 12.2 hits an internal compiler error inside Boost.PFR's field counting for aggregates that
// contain an array of non-trivially-destructible elements (docs/codec.md, "Limitations"); clang
// handles them, and on GCC a std::tuple around the array sidesteps it.
struct names_in_tuple {
  std::uint8_t n;
  std::tuple<std::array<std::string, 2>> names;
  bool operator==(const names_in_tuple&) const = default;
};

#if defined(__clang__)
struct names_in_array {
  std::uint8_t n;
  std::array<std::string, 2> list;
  bool operator==(const names_in_array&) const = default;
};
#endif

TEST(Struct, ArrayOfStringsMember) {
  const names_in_tuple t{2, {{"a", "b"}}};
  EXPECT_EQ(to_hex(t), "05 02 01 61 01 62");
  EXPECT_EQ(round_trip(t), t);
#if defined(__clang__)
  const names_in_array a{2, {"a", "b"}};
  EXPECT_EQ(to_hex(a), "05 02 01 61 01 62");
  EXPECT_EQ(round_trip(a), a);
#endif
}

}  // namespace
}  // namespace corvid::codec
