// Strings, spans, vectors, arrays, maps, sets, optional, variant, tuple, pair, monostate:
// exact bytes, round trips, zero-copy views and decoding over existing contents.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
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

#include "corvid/detail/byte_buffer.hpp"

#include "test_util.hpp"

namespace corvid::codec {
namespace {

using test::round_trip;
using test::to_bytes;
using test::to_hex;
using test::unhex;

TEST(String, LengthThenBytes) {
  EXPECT_EQ(to_hex(std::string()), "00");
  EXPECT_EQ(to_hex(std::string("hi")), "02 68 69");
  EXPECT_EQ(to_hex(std::string_view("hi")), "02 68 69");
  const std::string long_string(300, 'x');
  const std::string bytes = to_bytes(long_string);
  EXPECT_EQ(test::hex(bytes.substr(0, 3)), "ac 02 78");
  EXPECT_EQ(bytes.size(), 302u);
  EXPECT_EQ(round_trip(long_string), long_string);
  EXPECT_EQ(round_trip(std::string("with\0nul", 8)), std::string("with\0nul", 8));
}

TEST(String, LargeRoundTrip) {
  std::string big(1 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  EXPECT_EQ(round_trip(big), big);
}

TEST(String, StringViewDecodeIsZeroCopy) {
  const std::string bytes = unhex("05 68 65 6c 6c 6f");
  std::string_view out;
  ASSERT_EQ(decode(bytes, out), decode_errc::ok);
  EXPECT_EQ(out, "hello");
  EXPECT_EQ(out.data(), bytes.data() + 1);  // points into the input
}

TEST(String, ByteSpansMatchStringAndDecodeZeroCopy) {
  const std::string text = "abc";
  const std::string expected = to_bytes(text);
  const std::vector<char> chars(text.begin(), text.end());
  EXPECT_EQ(to_bytes(std::span<const char>(chars)), expected);
  EXPECT_EQ(to_bytes(chars), expected);  // vector<char> is one memcpy with the same bytes

  std::span<const char> c;
  ASSERT_EQ(decode(expected, c), decode_errc::ok);
  EXPECT_EQ(c.data(), expected.data() + 1);
  EXPECT_EQ(std::string_view(c.data(), c.size()), "abc");

  std::span<const std::byte> b;
  ASSERT_EQ(decode(expected, b), decode_errc::ok);
  EXPECT_EQ(static_cast<const void*>(b.data()), expected.data() + 1);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2], std::byte{'c'});

  std::span<const unsigned char> u;
  ASSERT_EQ(decode(expected, u), decode_errc::ok);
  EXPECT_EQ(static_cast<const void*>(u.data()), expected.data() + 1);
  EXPECT_EQ(to_bytes(u), expected);
}

TEST(Vector, ArithmeticElementsAreCountThenRawBytes) {
  EXPECT_EQ(to_hex(std::vector<std::uint16_t>{1, 2, 3}), "03 01 00 02 00 03 00");
  EXPECT_EQ(to_hex(std::vector<std::int32_t>{}), "00");
  EXPECT_EQ(to_hex(std::vector<double>{1.0}), "01 00 00 00 00 00 00 f0 3f");
  const std::vector<std::int64_t> v{-1, 0, 1, std::numeric_limits<std::int64_t>::max()};
  EXPECT_EQ(round_trip(v), v);
}

TEST(Vector, LargeVectorsRoundTrip) {
  std::vector<std::uint64_t> ints(1'000'000);
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = i * 0x9E3779B97F4A7C15ull;
  EXPECT_EQ(round_trip(ints), ints);
  EXPECT_EQ(to_bytes(ints).size(), 3 + 8'000'000u);  // 3-byte varint count, then one memcpy
  std::vector<std::string> strings(100'000);
  for (std::size_t i = 0; i < strings.size(); ++i) strings[i] = std::to_string(i);
  EXPECT_EQ(round_trip(strings), strings);
}

TEST(Vector, BoolIsOneByteEach) {
  EXPECT_EQ(to_hex(std::vector<bool>{true, false, true}), "03 01 00 01");
  const std::vector<bool> v{true, true, false, false, true};
  EXPECT_EQ(round_trip(v), v);
  std::vector<bool> out;
  EXPECT_EQ(decode(unhex("02 01 02"), out), decode_errc::invalid_value);
}

TEST(Vector, NestedAndNonArithmeticElements) {
  const std::vector<std::vector<int>> nested{{}, {1}, {2, 3}};
  EXPECT_EQ(to_hex(nested), "03 00 01 01 00 00 00 02 02 00 00 00 03 00 00 00");
  EXPECT_EQ(round_trip(nested), nested);
  const std::vector<std::optional<std::string>> opts{std::nullopt, "a"};
  EXPECT_EQ(to_hex(opts), "02 00 01 01 61");
  EXPECT_EQ(round_trip(opts), opts);
}

TEST(Vector, CustomAllocatorIsSupported) {
  const std::vector<int, test::counting_allocator<int>> v{1, 2, 3};
  EXPECT_EQ(to_bytes(v), to_bytes(std::vector<int>{1, 2, 3}));
  EXPECT_EQ(round_trip(v), v);
}

TEST(Span, NonByteSpansEncodeLikeVectors) {
  const std::vector<std::uint32_t> v{7, 8};
  EXPECT_EQ(to_bytes(std::span<const std::uint32_t>(v)), to_bytes(v));
  const std::vector<std::string> s{"x", "yz"};
  EXPECT_EQ(to_bytes(std::span<const std::string>(s)), to_bytes(s));
  static_assert(
      std::is_same_v<owning_t<std::span<const std::uint32_t>>, std::vector<std::uint32_t>>);
  EXPECT_EQ(round_trip(std::span<const std::uint32_t>(v)), v);  // decodes into owning_t
}

TEST(Array, ElementsWithoutCount) {
  EXPECT_EQ(to_hex(std::array<std::int8_t, 3>{1, -1, 2}), "01 ff 02");
  EXPECT_EQ(to_hex(std::array<int, 0>{}), "");
  EXPECT_EQ(to_hex(std::array<bool, 2>{true, false}), "01 00");
  const std::array<std::string, 2> s{"a", ""};
  EXPECT_EQ(to_hex(s), "01 61 00");
  EXPECT_EQ(round_trip(s), s);
  const std::array<std::array<std::uint16_t, 2>, 2> grid{{{1, 2}, {3, 4}}};
  EXPECT_EQ(to_hex(grid), "01 00 02 00 03 00 04 00");
  EXPECT_EQ(round_trip(grid), grid);
  std::array<bool, 2> bad{};
  EXPECT_EQ(decode(unhex("01 05"), bad), decode_errc::invalid_value);
}

TEST(Map, CountThenKeyValuePairs) {
  const std::map<std::string, std::uint8_t> m{{"a", 1}, {"b", 2}};
  EXPECT_EQ(to_hex(m), "02 01 61 01 01 62 02");
  EXPECT_EQ(round_trip(m), m);
  EXPECT_EQ(to_hex(std::map<int, int>{}), "00");
  const std::unordered_map<int, std::vector<std::string>> um{{1, {"x"}}, {2, {}}, {3, {"", "y"}}};
  EXPECT_EQ(round_trip(um, test::order::unordered), um);
  // Unsorted input is accepted (the sender may be an unordered_map).
  std::map<std::uint8_t, std::uint8_t> out;
  ASSERT_EQ(decode(unhex("02 05 01 03 02"), out), decode_errc::ok);
  EXPECT_EQ(out, (std::map<std::uint8_t, std::uint8_t>{{3, 2}, {5, 1}}));
}

TEST(Map, DuplicateKeysAreRejected) {
  std::map<std::uint8_t, std::uint8_t> m;
  EXPECT_EQ(decode(unhex("02 01 0a 01 0b"), m), decode_errc::invalid_value);
  std::unordered_map<std::string, bool> um;
  EXPECT_EQ(decode(unhex("02 01 6b 01 01 6b 00"), um), decode_errc::invalid_value);
}

TEST(Set, CountThenElements) {
  EXPECT_EQ(to_hex(std::set<std::uint8_t>{3, 1}), "02 01 03");
  const std::set<std::string> s{"", "a", "bc"};
  EXPECT_EQ(round_trip(s), s);
  const std::unordered_set<std::int64_t> us{-5, 0, 99};
  EXPECT_EQ(round_trip(us, test::order::unordered), us);
  std::set<std::uint8_t> dup;
  EXPECT_EQ(decode(unhex("02 07 07"), dup), decode_errc::invalid_value);
  std::unordered_set<std::uint8_t> udup;
  EXPECT_EQ(decode(unhex("03 01 02 01"), udup), decode_errc::invalid_value);
}

TEST(Optional, TagThenValue) {
  EXPECT_EQ(to_hex(std::optional<std::uint32_t>{}), "00");
  EXPECT_EQ(to_hex(std::optional<std::uint32_t>{5}), "01 05 00 00 00");
  EXPECT_EQ(round_trip(std::optional<std::string>{"x"}), std::optional<std::string>{"x"});
  EXPECT_EQ(round_trip(std::optional<int>{}), std::nullopt);
  std::optional<int> out;
  EXPECT_EQ(decode(unhex("02 05 00 00 00"), out), decode_errc::invalid_value);
  EXPECT_EQ(decode(unhex("ff"), out), decode_errc::invalid_value);
  EXPECT_EQ(decode(unhex("01 05 00"), out), decode_errc::truncated);
}

using value_variant = std::variant<std::monostate, std::int32_t, std::string>;

TEST(Variant, IndexThenAlternative) {
  EXPECT_EQ(to_hex(value_variant{}), "00");
  EXPECT_EQ(to_hex(value_variant{7}), "01 07 00 00 00");
  EXPECT_EQ(to_hex(value_variant{std::string("x")}), "02 01 78");
  for (const value_variant& v : {value_variant{}, value_variant{-1}, value_variant{"str"}}) {
    EXPECT_EQ(round_trip(v), v);
  }
}

TEST(Variant, DuplicateAlternativeTypesKeepTheirIndex) {
  using twin = std::variant<int, int>;
  const twin second(std::in_place_index<1>, 9);
  EXPECT_EQ(to_hex(second), "01 09 00 00 00");
  EXPECT_EQ(round_trip(second).index(), 1u);
}

// An index past the alternatives is unknown_alternative: a newer peer may have appended one.
TEST(Variant, BadIndexIsRejected) {
  value_variant out;
  EXPECT_EQ(decode(unhex("03"), out), decode_errc::unknown_alternative);
  EXPECT_EQ(decode(unhex("7f"), out), decode_errc::unknown_alternative);
  EXPECT_EQ(decode(unhex("ff ff ff ff 0f"), out), decode_errc::unknown_alternative);
  EXPECT_EQ(decode(unhex("80 00"), out), decode_errc::invalid_value);  // non-minimal 0
  EXPECT_EQ(decode(unhex("ff ff ff ff ff 01"), out), decode_errc::length_overflow);
  EXPECT_EQ(decode(unhex(""), out), decode_errc::truncated);
}

TEST(Tuple, ElementsInOrderWithoutPrefix) {
  EXPECT_EQ(to_hex(std::tuple<std::uint8_t, std::string, bool>{7, "ab", true}), "07 02 61 62 01");
  EXPECT_EQ(to_hex(std::pair<std::uint8_t, std::uint16_t>{1, 2}), "01 02 00");
  EXPECT_EQ(to_hex(std::tuple<>{}), "");
  EXPECT_EQ(to_hex(std::monostate{}), "");
  const std::tuple<int, std::vector<std::string>, std::optional<double>> t{1, {"a"}, 2.5};
  EXPECT_EQ(round_trip(t), t);
  const std::pair<std::string, std::map<int, int>> p{"k", {{1, 2}}};
  EXPECT_EQ(round_trip(p), p);
}

TEST(Tuple, TieDecodesIntoSeparateVariables) {
  const std::string bytes = to_bytes(std::tuple<int, std::string>{5, "five"});
  int n = 0;
  std::string s;
  auto tied = std::tie(n, s);
  ASSERT_EQ(decode(bytes, tied), decode_errc::ok);
  EXPECT_EQ(n, 5);
  EXPECT_EQ(s, "five");
  EXPECT_EQ(to_bytes(std::tie(n, s)), bytes);
}

TEST(EncodeAll, SameBytesAsTuple) {
  std::string a;
  string_sink sink(a);
  encode_all(sink, std::uint8_t{1}, std::string("ok"), std::vector<int>{3});
  EXPECT_EQ(a, to_bytes(std::tuple<std::uint8_t, std::string, std::vector<int>>{1, "ok", {3}}));
  EXPECT_EQ(test::hex(a), "01 02 6f 6b 01 03 00 00 00");
  std::string empty;
  string_sink empty_sink(empty);
  encode_all(empty_sink);
  EXPECT_TRUE(empty.empty());
}

TEST(Sink, ByteBufferAndStringSinkProduceTheSameBytes) {
  const std::map<std::string, std::vector<int>> value{{"a", {1, 2}}, {"b", {}}};
  corvid::detail::byte_buffer buf;
  encode(buf, value);
  encode(buf, std::string("tail"));
  std::string s;
  string_sink sink(s);
  encode(sink, value);
  encode(sink, std::string("tail"));
  EXPECT_EQ(buf.view(), s);
  EXPECT_EQ(&sink.str(), &s);
  // Two values back to back decode one at a time with decode_from.
  reader r(buf.view());
  std::map<std::string, std::vector<int>> first;
  std::string_view second;
  ASSERT_EQ(decode_from(r, first), decode_errc::ok);
  ASSERT_EQ(decode_from(r, second), decode_errc::ok);
  EXPECT_EQ(first, value);
  EXPECT_EQ(second, "tail");
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(Overwrite, DecodingReplacesExistingContents) {
  std::vector<std::string> v{"old", "values", "here"};
  ASSERT_EQ(decode(to_bytes(std::vector<std::string>{"new"}), v), decode_errc::ok);
  EXPECT_EQ(v, std::vector<std::string>{"new"});
  std::vector<int> ints{9, 9, 9, 9};
  ASSERT_EQ(decode(to_bytes(std::vector<int>{1}), ints), decode_errc::ok);
  EXPECT_EQ(ints, std::vector<int>{1});
  std::vector<bool> bools{true, true, true};
  ASSERT_EQ(decode(to_bytes(std::vector<bool>{false}), bools), decode_errc::ok);
  EXPECT_EQ(bools, std::vector<bool>{false});
  std::map<int, int> m{{1, 1}, {2, 2}};
  ASSERT_EQ(decode(to_bytes(std::map<int, int>{{3, 3}}), m), decode_errc::ok);
  EXPECT_EQ(m, (std::map<int, int>{{3, 3}}));
  std::unordered_set<int> s{1, 2};
  ASSERT_EQ(decode(to_bytes(std::unordered_set<int>{}), s), decode_errc::ok);
  EXPECT_TRUE(s.empty());
  std::optional<std::string> o{"old"};
  ASSERT_EQ(decode(to_bytes(std::optional<std::string>{}), o), decode_errc::ok);
  EXPECT_FALSE(o.has_value());
  std::optional<std::string> o2{"old and long"};
  ASSERT_EQ(decode(to_bytes(std::optional<std::string>{"n"}), o2), decode_errc::ok);
  EXPECT_EQ(o2, "n");
  value_variant var{std::string("old")};
  ASSERT_EQ(decode(to_bytes(value_variant{4}), var), decode_errc::ok);
  EXPECT_EQ(var, value_variant{4});
  value_variant same{std::string("old")};
  ASSERT_EQ(decode(to_bytes(value_variant{std::string("new")}), same), decode_errc::ok);
  EXPECT_EQ(same, value_variant{std::string("new")});
  std::string str = "previous";
  ASSERT_EQ(decode(to_bytes(std::string("x")), str), decode_errc::ok);
  EXPECT_EQ(str, "x");
}

}  // namespace
}  // namespace corvid::codec
