// Struct evolution in the codec: a reader gives the trailing fields an older writer did not have
// their defaults and skips the trailing fields a newer writer added; a field cut in the middle,
// a length past the input, and unknown enum values and variant alternatives are errors.
// The same across real sockets between two builds: tests/evolution.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace corvid::codec {
namespace {

using test::decode_exact;
using test::to_bytes;
using test::unhex;

// Two versions of one message, as two builds of a service would see it: v2 appended fields,
// and its nested struct appended one too.
namespace v1 {
struct tag {
  std::string key;
  bool operator==(const tag&) const = default;
};
struct order {
  std::uint64_t id;
  std::string customer;
  std::vector<tag> tags;
  bool operator==(const order&) const = default;
};
}  // namespace v1

namespace v2 {
struct tag {
  std::string key;
  std::int32_t weight = -1;
  bool operator==(const tag&) const = default;
};
struct order {
  std::uint64_t id;
  std::string customer;
  std::vector<tag> tags;
  std::optional<std::string> note = "none";
  std::map<std::string, std::uint32_t> counts;
  std::array<std::uint16_t, 2> pair{{7, 8}};
  bool operator==(const order&) const = default;
};
}  // namespace v2

TEST(Evolution, OldWriterNewReaderGetsDefaults) {
  const v1::order old{42, "ann", {{"a"}, {"b"}}};
  v2::order out{};
  // Decoding over a value that holds something else: the missing fields are reset, not kept.
  out.note = "stale";
  out.counts = {{"x", 1}};
  out.pair = {1, 1};
  ASSERT_EQ(decode_exact(to_bytes(old), out), decode_errc::ok);
  EXPECT_EQ(out, (v2::order{42, "ann", {{"a", -1}, {"b", -1}}, "none", {}, {{7, 8}}}));
}

TEST(Evolution, NewWriterOldReaderSkipsUnknownFields) {
  const v2::order newer{42, "ann", {{"a", 5}, {"b", 6}}, "rush", {{"k", 3}}, {{1, 2}}};
  v1::order out{};
  ASSERT_EQ(decode_exact(to_bytes(newer), out), decode_errc::ok);
  EXPECT_EQ(out, (v1::order{42, "ann", {{"a"}, {"b"}}}));
  // The old reader still insists that the whole input is one value.
  EXPECT_EQ(decode(to_bytes(newer) + "x", out), decode_errc::trailing_bytes);
}

TEST(Evolution, TruncatedBodiesDefaultAtFieldBoundariesOnly) {
  const v2::tag full{"key", 0x01020304};
  const std::string bytes = to_bytes(full);  // 08, 03 'k' 'e' 'y', 04 03 02 01
  ASSERT_EQ(test::hex(bytes), "08 03 6b 65 79 04 03 02 01");
  const std::string body = bytes.substr(1);
  for (std::size_t n = 0; n <= body.size(); ++n) {
    std::string cut(1, static_cast<char>(n));
    cut += body.substr(0, n);
    v2::tag out{"old", 99};
    const decode_errc ec = decode_exact(cut, out);
    if (n == 0) {
      EXPECT_EQ(ec, decode_errc::ok);
      EXPECT_EQ(out, (v2::tag{"", -1}));
    } else if (n == 4) {
      EXPECT_EQ(ec, decode_errc::ok);
      EXPECT_EQ(out, (v2::tag{"key", -1}));
    } else if (n == body.size()) {
      EXPECT_EQ(ec, decode_errc::ok);
      EXPECT_EQ(out, full);
    } else {
      // Cut inside the string (its length claims more than the body holds) or the int.
      EXPECT_EQ(ec, n < 4 ? decode_errc::length_overflow : decode_errc::truncated)
          << "body of " << n << " bytes";
    }
  }
  // A length past the end of the input.
  v2::tag out;
  EXPECT_EQ(decode_exact(unhex("09 03 6b 65 79 04 03 02 01"), out), decode_errc::truncated);
  EXPECT_EQ(decode_exact(unhex("ff ff ff ff 0f"), out), decode_errc::truncated);
  EXPECT_EQ(decode_exact(unhex("80 00"), out), decode_errc::invalid_value);  // non-minimal
}

// Every prefix of every struct length inside a nested message, and random bytes appended to or
// spliced into bodies: decoding never misbehaves (ASan, exact-size input) and never succeeds
// with a value that does not re-encode and decode to itself.
TEST(Evolution, CutAndGrownBodiesNeverMisbehave) {
  std::mt19937 rng(14);
  const v2::order base{9, "bob", {{"a", 1}, {"bb", 2}}, std::nullopt, {{"n", 4}}, {{3, 4}}};
  const std::string bytes = to_bytes(base);
  int ok = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string in = bytes;
    const std::size_t at = rng() % (in.size() + 1);
    if (i % 2 == 0) {
      in.resize(at);  // a prefix: always an error
    } else {
      std::string junk(rng() % 6, '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      in.insert(at, junk);
    }
    v2::order out{};
    v1::order old_out{};
    const decode_errc ec = decode_exact(in, out);
    const decode_errc old_ec = decode_exact(in, old_out);
    if (i % 2 == 0 && at < bytes.size()) {
      EXPECT_TRUE(ec == decode_errc::truncated || ec == decode_errc::length_overflow)
          << to_string(ec);
    }
    if (ec == decode_errc::ok) {
      ++ok;
      v2::order again{};
      ASSERT_EQ(decode(to_bytes(out), again), decode_errc::ok);
      EXPECT_EQ(again, out);
    }
    if (old_ec == decode_errc::ok) {
      v1::order again{};
      ASSERT_EQ(decode(to_bytes(old_out), again), decode_errc::ok);
      EXPECT_EQ(again, old_out);
    }
  }
  EXPECT_GT(ok, 0);
}

TEST(Evolution, BudgetedDecodeMatchesPlain) {
  const v1::order old{1, std::string(100, 'c'), {{"a"}, {std::string(40, 't')}}};
  v2::order plain{};
  ASSERT_EQ(decode(to_bytes(old), plain), decode_errc::ok);
  v2::order charged{};
  decode_budget budget(1 << 20);
  ASSERT_EQ(decode(to_bytes(old), charged, budget), decode_errc::ok);
  EXPECT_EQ(charged, plain);
  EXPECT_GT(budget.used(), 0u);
  decode_budget tiny(8);
  v2::order refused{};
  EXPECT_EQ(decode(to_bytes(old), refused, tiny), decode_errc::over_budget);
}

// A padding-free struct of scalars: its fields are one memcpy when all are present, and still
// take defaults when an older writer sent fewer.
struct sample_v1 {
  std::uint32_t a;
  bool operator==(const sample_v1&) const = default;
};
struct sample_v2 {
  std::uint32_t a;
  std::uint32_t b = 5;
  bool operator==(const sample_v2&) const = default;
};

TEST(Evolution, BulkBodies) {
  static_assert(detail::bulk_body_v<sample_v2>);
  sample_v2 out{0, 0};
  ASSERT_EQ(decode(to_bytes(sample_v1{3}), out), decode_errc::ok);
  EXPECT_EQ(out, (sample_v2{3, 5}));
  sample_v1 old{};
  ASSERT_EQ(decode(to_bytes(sample_v2{3, 4}), old), decode_errc::ok);
  EXPECT_EQ(old.a, 3u);
  std::vector<sample_v2> many;
  ASSERT_EQ(decode(to_bytes(std::vector<sample_v1>{{1}, {2}}), many), decode_errc::ok);
  EXPECT_EQ(many, (std::vector<sample_v2>{{1, 5}, {2, 5}}));
  // Extra bytes after the known fields of a bulk body are skipped too.
  ASSERT_EQ(decode(unhex("0a 01 00 00 00 02 00 00 00 ff ff"), out), decode_errc::ok);
  EXPECT_EQ(out, (sample_v2{1, 2}));
}

// Fixed-size evolvable structs nested in every kind of holder: the holder's fixed size counts
// each nested struct's length byte and fields (its minimum, 1 byte, is not its size).
struct inner_fixed {
  std::uint16_t a;
  std::uint8_t b;
  bool operator==(const inner_fixed&) const = default;
};
struct outer_fixed {
  inner_fixed first;
  std::uint32_t n;
  inner_fixed second;
  bool operator==(const outer_fixed&) const = default;
};
struct frozen_outer {
  using codec_layout = frozen;
  inner_fixed first;
  std::uint8_t n;
  bool operator==(const frozen_outer&) const = default;
};

template <class T>
void expect_sized(const T& value, std::size_t bytes) {
  EXPECT_EQ(detail::fixed_encoded_size_v<T>, bytes);
  EXPECT_EQ(encoded_size(value), bytes);
  EXPECT_EQ(to_bytes(value).size(), bytes);
  EXPECT_EQ(test::round_trip(value), value);
}

TEST(Evolution, NestedFixedStructsAreSizedWhole) {
  const inner_fixed i{1, 2};
  expect_sized(i, 4);                                 // 03 + 3 bytes of fields
  expect_sized(outer_fixed{i, 5, i}, 1 + 4 + 4 + 4);  // length, first, n, second
  expect_sized(frozen_outer{i, 6}, 4 + 1);
  expect_sized(std::tuple<inner_fixed, std::uint8_t>{i, 7}, 5);
  expect_sized(std::array<inner_fixed, 3>{i, i, i}, 12);
  EXPECT_EQ(encoded_size(std::vector<outer_fixed>{{i, 1, i}, {i, 2, i}}), 1 + 2 * 13u);
  EXPECT_EQ(test::round_trip(std::vector<outer_fixed>{{i, 1, i}}),
            (std::vector<outer_fixed>{{i, 1, i}}));
}

enum class status : std::uint8_t { active = 1, closed = 2 };
constexpr auto corvid_enum_values(status) { return std::array{status::active, status::closed}; }
enum class open_status : std::uint8_t { active = 1, closed = 2 };  // no list: any value decodes

struct ticket {
  status s;
  std::variant<std::monostate, std::string> detail;
};

TEST(Evolution, UnknownEnumValuesAndAlternativesAreErrors) {
  static_assert(closed_enum<status> && !closed_enum<open_status>);
  static_assert(!detail::is_bulk_v<status>);  // each value is checked, so no memcpy
  status s{};
  EXPECT_EQ(decode(unhex("02"), s), decode_errc::ok);
  EXPECT_EQ(s, status::closed);
  EXPECT_EQ(decode(unhex("00"), s), decode_errc::unknown_alternative);
  EXPECT_EQ(decode(unhex("03"), s), decode_errc::unknown_alternative);
  std::vector<status> v;
  EXPECT_EQ(decode(unhex("02 01 07"), v), decode_errc::unknown_alternative);
  open_status o{};
  EXPECT_EQ(decode(unhex("03"), o), decode_errc::ok);
  EXPECT_EQ(static_cast<int>(o), 3);
  ticket t{};
  EXPECT_EQ(decode(unhex("02 01 00"), t), decode_errc::ok);
  EXPECT_EQ(decode(unhex("02 03 00"), t), decode_errc::unknown_alternative);
  EXPECT_EQ(decode(unhex("02 01 02"), t), decode_errc::unknown_alternative);
}

}  // namespace
}  // namespace corvid::codec
