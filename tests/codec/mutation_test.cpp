// Deterministic mutation fuzzing: thousands of corrupted variants of valid encodings (and pure
// random bytes) must each decode to an error code or to a value that re-encodes consistently.
// Inputs are exact-size heap copies, so under ASan/UBSan any out-of-bounds read or UB aborts.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
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

using test::to_bytes;

enum class kind8 : std::uint8_t { a, b };

struct item {
  std::uint16_t id;
  std::string label;
  std::optional<double> weight;
};

struct fuzz_target {
  bool flag;
  kind8 kind;
  std::int32_t n;
  std::string name;
  std::string_view view;
  std::vector<std::uint32_t> words;
  std::vector<bool> bits;
  std::vector<item> items;
  std::array<std::int16_t, 3> triple;
  std::map<std::string, std::vector<std::uint8_t>> blobs;
  std::unordered_map<std::uint32_t, std::string> names;
  std::set<std::int64_t> ids;
  std::optional<item> maybe;
  std::variant<std::monostate, std::int64_t, std::string, item> choice;
  std::tuple<std::uint8_t, std::vector<std::string>> pair_like;
  std::vector<std::monostate> units;
  std::span<const std::byte> raw;
};

fuzz_target make_target(std::uint32_t salt) {
  static const std::string viewed = "a view";
  static const std::array<std::byte, 3> raw{std::byte{1}, std::byte{2}, std::byte{3}};
  fuzz_target t{};
  t.flag = (salt & 1) != 0;
  t.kind = kind8::b;
  t.n = -static_cast<std::int32_t>(salt);
  t.name = std::string(salt % 150, 'q');
  t.view = viewed;
  t.words = {salt, 2, 0xFFFFFFFF};
  t.bits = {true, false, true};
  t.items = {item{1, "one", 1.0}, item{2, "", std::nullopt}};
  t.triple = {-1, 0, 1};
  t.blobs = {{"b", {1, 2}}, {"c", {}}};
  t.names = {{1, "x"}, {salt, "y"}};
  t.ids = {-1, 1, static_cast<std::int64_t>(salt) << 20};
  t.maybe = item{3, "three", std::nullopt};
  if (salt % 3 == 0) t.choice = std::string("s");
  if (salt % 3 == 1) t.choice = item{4, "four", 4.0};
  t.pair_like = {9, {"p", "q"}};
  t.units = {{}, {}};
  t.raw = raw;
  return t;
}

// A decoded value must re-encode to its own encoded_size, and that encoding must decode again
// to a value with the same encoding. The first re-encoding may differ in size from the input:
// an evolvable struct's body may have been short (missing fields take their defaults) or long
// (unknown trailing bytes are skipped), and unordered containers may reorder.
void check_consistent(const fuzz_target& value, std::size_t input_size) {
  static_cast<void>(input_size);
  const std::string again = to_bytes(value);
  ASSERT_EQ(encoded_size(value), again.size());
  const test::exact_copy copy(again);  // second's views point into it
  fuzz_target second{};
  ASSERT_EQ(decode(copy.view(), second), decode_errc::ok);
  ASSERT_EQ(to_bytes(second).size(), again.size());
}

// Applies one random corruption to bytes. Each random draw is its own statement, so the
// sequence (and any failure) is the same with every compiler.
void mutate(std::string& bytes, std::mt19937& rng) {
  static constexpr char interesting[] = {'\x00', '\x01', '\x02', '\x7f', '\x80', '\xff'};
  const auto pick = [&](std::size_t n) {
    return static_cast<std::size_t>(rng() % n);
  };
  const auto op = rng() % 8;
  if (bytes.empty() && op != 3 && op != 6) return;
  const std::size_t at = pick(bytes.size() + 1);  // insertion point, or a byte when < size
  const std::size_t pos = at == bytes.size() ? 0 : at;
  switch (op) {
    case 0:  // flip one bit
      bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << pick(8)));
      break;
    case 1:  // overwrite one byte with a random value
      bytes[pos] = static_cast<char>(rng());
      break;
    case 2:  // overwrite one byte with a boundary value
      bytes[pos] = interesting[pick(sizeof interesting)];
      break;
    case 3:  // insert a byte
      bytes.insert(at, 1, static_cast<char>(rng()));
      break;
    case 4:  // delete a byte
      bytes.erase(pos, 1);
      break;
    case 5:  // truncate
      bytes.resize(at);
      break;
    case 6:  // plant a maximal varint (a huge length)
      bytes.insert(at, "\xff\xff\xff\xff\x0f", 5);
      break;
    default: {  // duplicate a chunk
      const std::size_t len = 1 + pick(std::min<std::size_t>(16, bytes.size() - pos));
      const std::string chunk = bytes.substr(pos, len);
      bytes.insert(pick(bytes.size() + 1), chunk);
      break;
    }
  }
}

TEST(Mutation, CorruptedEncodingsNeverMisbehave) {
  std::mt19937 rng(0xC0DEC);  // fixed seed: failures reproduce
  std::map<decode_errc, int> outcomes;
  constexpr int kBases = 8;
  constexpr int kMutationsPerBase = 1000;
  for (std::uint32_t base = 0; base < kBases; ++base) {
    const std::string valid = to_bytes(make_target(base * 37 + 1));
    for (int i = 0; i < kMutationsPerBase; ++i) {
      std::string bytes = valid;
      const int rounds = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < rounds; ++k) mutate(bytes, rng);
      fuzz_target out{};
      const test::exact_copy input(bytes);
      const decode_errc ec = decode(input.view(), out);
      ++outcomes[ec];
      if (ec == decode_errc::ok) {
        ASSERT_NO_FATAL_FAILURE(check_consistent(out, bytes.size()))
            << "base " << base << " i " << i;
      }
    }
  }
  for (const auto& [ec, count] : outcomes) {
    std::printf("  %-16s %d\n", std::string(to_string(ec)).c_str(), count);
  }
  // The mutations must reach every failure path, and some must still decode.
  EXPECT_GT(outcomes[decode_errc::ok], 0);
  EXPECT_GT(outcomes[decode_errc::truncated], 0);
  EXPECT_GT(outcomes[decode_errc::invalid_value], 0);
  EXPECT_GT(outcomes[decode_errc::length_overflow], 0);
  EXPECT_GT(outcomes[decode_errc::trailing_bytes], 0);
}

TEST(Mutation, RandomBytesNeverMisbehave) {
  std::mt19937 rng(20240601);
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 96, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const test::exact_copy input(bytes);  // outlives the views decoded from it
    fuzz_target out{};
    if (decode(input.view(), out) == decode_errc::ok) {
      ++decoded;
      ASSERT_NO_FATAL_FAILURE(check_consistent(out, bytes.size()));
    }
    // Smaller types get a turn at the same bytes.
    std::variant<std::monostate, std::vector<std::string>, std::map<std::uint8_t, bool>> v;
    if (decode(input.view(), v) == decode_errc::ok) {
      EXPECT_EQ(encoded_size(v), bytes.size());
    }
    std::optional<std::tuple<bool, std::string_view, std::vector<std::int16_t>>> o;
    if (decode(input.view(), o) == decode_errc::ok) {
      EXPECT_EQ(encoded_size(o), bytes.size());
    }
  }
  std::printf("  random inputs that decoded as fuzz_target: %d\n", decoded);
}

}  // namespace
}  // namespace corvid::codec
