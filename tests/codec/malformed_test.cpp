// Hostile input: every truncation of a valid encoding, invalid tags and indices, over-long and
// huge varints, lengths claiming more than the input holds, and trailing bytes. Each must yield
// the right error code without reading out of bounds (run under ASan) or allocating big.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace corvid::codec {
namespace {

using test::decode_exact;
using test::to_bytes;
using test::unhex;

struct leaf {
  std::int16_t n;
  std::string s;
  bool operator==(const leaf&) const = default;
};

struct complex_value {
  bool b;
  std::uint64_t big;
  std::string name;
  std::string_view view;
  std::vector<std::int32_t> ints;
  std::vector<leaf> leaves;
  std::map<std::string, std::vector<bool>> flags;
  std::optional<std::variant<std::monostate, double, leaf>> choice;
  std::tuple<std::uint8_t, std::set<std::string>> extra;
  std::array<leaf, 0> none;
  std::vector<std::monostate> units;
  float last;
};

complex_value sample() {
  static const std::string viewed = "viewed";
  return complex_value{true,
                       0x0102030405060708ull,
                       std::string(200, 'n'),  // a 2-byte varint length
                       viewed,
                       {1, -1, 1 << 20},
                       {{1, "a"}, {-2, ""}, {3, std::string(130, 'z')}},
                       {{"f", {true, false}}, {"g", {}}},
                       std::variant<std::monostate, double, leaf>{leaf{9, "nine"}},
                       {7, {"x", "yy"}},
                       {},
                       {{}, {}},
                       2.5f};
}

TEST(Malformed, EveryTruncationFailsCleanly) {
  const std::string full = to_bytes(sample());
  ASSERT_GT(full.size(), 400u);
  for (std::size_t len = 0; len < full.size(); ++len) {
    complex_value out{};
    const decode_errc ec = decode_exact(std::string_view(full).substr(0, len), out);
    EXPECT_TRUE(ec == decode_errc::truncated || ec == decode_errc::length_overflow)
        << "prefix " << len << ": " << to_string(ec);
  }
  complex_value out{};
  EXPECT_EQ(decode_exact(full, out), decode_errc::ok);
}

TEST(Malformed, TrailingBytesAreRejectedByDecodeButNotDecodeFrom) {
  const std::string bytes = to_bytes(sample()) + "x";
  complex_value out{};
  EXPECT_EQ(decode(bytes, out), decode_errc::trailing_bytes);
  reader r(bytes);
  EXPECT_EQ(decode_from(r, out), decode_errc::ok);
  EXPECT_EQ(r.rest(), "x");
  std::uint8_t one = 0;
  EXPECT_EQ(decode(unhex("01 02"), one), decode_errc::trailing_bytes);
  std::vector<int> v;
  EXPECT_EQ(decode(unhex("00 00"), v), decode_errc::trailing_bytes);
}

TEST(Malformed, EmptyInputIsTruncatedForEveryNonEmptyType) {
  complex_value c{};
  EXPECT_EQ(decode("", c), decode_errc::truncated);
  std::string s;
  EXPECT_EQ(decode("", s), decode_errc::truncated);
  std::map<int, int> m;
  EXPECT_EQ(decode("", m), decode_errc::truncated);
  std::optional<int> o;
  EXPECT_EQ(decode("", o), decode_errc::truncated);
  std::monostate ms;
  EXPECT_EQ(decode("", ms), decode_errc::ok);  // zero bytes is its whole encoding
}

TEST(Malformed, BadTagsAndIndices) {
  bool b = false;
  EXPECT_EQ(decode(unhex("02"), b), decode_errc::invalid_value);
  std::optional<std::string> o;
  EXPECT_EQ(decode(unhex("02 00"), o), decode_errc::invalid_value);
  std::variant<int, std::string> v;
  EXPECT_EQ(decode(unhex("02 00"), v), decode_errc::unknown_alternative);
  std::vector<bool> vb;
  EXPECT_EQ(decode(unhex("03 00 01 ff"), vb), decode_errc::invalid_value);
  std::tuple<bool, bool> t;
  EXPECT_EQ(decode(unhex("01 80"), t), decode_errc::invalid_value);
}

TEST(Malformed, OverLongAndNonMinimalLengths) {
  std::string s;
  EXPECT_EQ(decode(unhex("80 80 80 80 80 80 01"), s), decode_errc::length_overflow);
  EXPECT_EQ(decode(unhex("ff ff ff ff 7f"), s), decode_errc::length_overflow);
  EXPECT_EQ(decode(unhex("81 00 61"), s), decode_errc::invalid_value);
  std::vector<int> v;
  EXPECT_EQ(decode(unhex("80 80 80 80 80 80 80 80 80 80"), v), decode_errc::length_overflow);
}

// The attack the count check exists for: a few bytes claiming 2^32-1 elements.
TEST(Malformed, HugeCountsFailBeforeAnyAllocation) {
  const std::string claim = unhex("ff ff ff ff 0f 01 02 03 04 05");  // 10 bytes in all
  test::g_allocation_stats = {};
  std::vector<std::uint8_t, test::counting_allocator<std::uint8_t>> bytes_vec;
  EXPECT_EQ(decode_exact(claim, bytes_vec), decode_errc::length_overflow);
  std::vector<std::string, test::counting_allocator<std::string>> strings;
  EXPECT_EQ(decode_exact(claim, strings), decode_errc::length_overflow);
  std::vector<std::monostate, test::counting_allocator<std::monostate>> units;
  EXPECT_EQ(decode_exact(claim, units), decode_errc::length_overflow);
  std::vector<bool, test::counting_allocator<bool>> bools;
  EXPECT_EQ(decode_exact(claim, bools), decode_errc::length_overflow);
  using counted_map =
      std::map<int, int, std::less<>, test::counting_allocator<std::pair<const int, int>>>;
  counted_map m;
  EXPECT_EQ(decode_exact(claim, m), decode_errc::length_overflow);
  using counted_umap = std::unordered_map<int, int, std::hash<int>, std::equal_to<>,
                                          test::counting_allocator<std::pair<const int, int>>>;
  counted_umap um;
  EXPECT_EQ(decode_exact(claim, um), decode_errc::length_overflow);
  EXPECT_EQ(test::g_allocation_stats.largest_bytes, 0u);

  std::string s;
  EXPECT_EQ(decode_exact(claim, s), decode_errc::length_overflow);
  std::vector<std::uint64_t> words;
  // 5 bytes remain after the count: not even one 8-byte element fits.
  EXPECT_EQ(decode_exact(unhex("01 01 02 03 04 05"), words), decode_errc::length_overflow);
  std::vector<std::vector<int>> nested;
  EXPECT_EQ(decode_exact(unhex("02 ff ff ff ff 0f 00"), nested), decode_errc::length_overflow);
}

// A count is checked against the bytes left, so a count that fits is allocated at most in
// proportion to the input: here every element is 1 byte (an empty string), so 1000 strings need
// 1000 input bytes.
TEST(Malformed, PlausibleCountsAllocateInProportionToInput) {
  std::string input = unhex("e8 07");  // 1000
  input += std::string(999, '\0');     // one byte short
  test::g_allocation_stats = {};
  std::vector<std::string, test::counting_allocator<std::string>> strings;
  EXPECT_EQ(decode_exact(input, strings), decode_errc::length_overflow);
  EXPECT_EQ(test::g_allocation_stats.allocations, 0u);
  input += '\0';
  EXPECT_EQ(decode_exact(input, strings), decode_errc::ok);
  EXPECT_EQ(strings.size(), 1000u);
}

// Zero-byte elements are capped at one per remaining input byte (docs/codec.md): a bare count
// cannot make the decoder loop 4 billion times, at the price that such a container decodes only
// when at least that many bytes follow it.
TEST(Malformed, ZeroSizeElementCountsAreCappedByRemainingBytes) {
  std::vector<std::monostate> units;
  EXPECT_EQ(decode(unhex("03"), units), decode_errc::length_overflow);
  std::tuple<std::vector<std::monostate>, std::array<std::uint8_t, 3>> followed;
  ASSERT_EQ(decode(unhex("03 aa bb cc"), followed), decode_errc::ok);
  EXPECT_EQ(std::get<0>(followed).size(), 3u);
  std::set<std::tuple<>> empty_tuples;
  EXPECT_EQ(decode(unhex("00"), empty_tuples), decode_errc::ok);
}

TEST(Malformed, DuplicateKeysAreInvalid) {
  std::map<std::string, int> m;
  EXPECT_EQ(decode(unhex("02 01 61 01 00 00 00 01 61 02 00 00 00"), m), decode_errc::invalid_value);
  std::set<std::tuple<>> s;
  EXPECT_EQ(decode(unhex("02 00 00"), s), decode_errc::invalid_value);
}

}  // namespace
}  // namespace corvid::codec
