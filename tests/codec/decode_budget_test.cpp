// decode_budget: the decoder charges every heap allocation to the budget before making it.
// This binary replaces the global operator new (allocation_probe.cpp), so each test measures
// what decoding really allocated and compares it with what was charged: charged >= allocated
// for every value, and a refused decode allocates no more than the budget.
#include "corvid/codec/decode_budget.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "allocation_probe.hpp"
#include "test_util.hpp"

namespace corvid::codec {
namespace {

using test::to_bytes;

struct measured {
  decode_errc ec = decode_errc::ok;
  std::size_t allocated = 0;  // bytes operator new was asked for during the decode
  std::size_t allocations = 0;
  bool refused = false;  // the decode asked for more than the probe's guard allows
};

// Decodes bytes into out under budget and measures the allocations the decode itself made.
template <class T>
measured decode_measured(std::string_view bytes, T& out, decode_budget& budget) {
  measured m;
  test::probe_arm();
  try {
    m.ec = decode(bytes, out, budget);
  } catch (const std::bad_alloc&) {
    m.ec = decode_errc::ok;  // reported through `refused`
  }
  const test::probe_counts counts = test::probe_disarm();
  m.allocated = counts.bytes;
  m.allocations = counts.count;
  m.refused = counts.refused;
  return m;
}

// A count prefix followed by `fill` bytes: a hostile message claiming `count` elements that
// each encode to one byte (an empty optional, variant index 0, an empty string or vector).
std::string claim(std::uint32_t count, std::size_t fill_bytes, char fill = '\0') {
  std::string out(varint_size(count), '\0');
  write_varint(out.data(), count);
  out.append(fill_bytes, fill);
  return out;
}

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

// ---------------------------------------------------------------------------------------------
// decode_budget itself

TEST(DecodeBudget, TakeChargesUpToTheLimitAndNoFurther) {
  decode_budget b(100);
  EXPECT_EQ(b.limit(), 100u);
  EXPECT_EQ(b.used(), 0u);
  EXPECT_TRUE(b.take(0));
  EXPECT_TRUE(b.take(60));
  EXPECT_FALSE(b.take(41));  // would reach 101
  EXPECT_EQ(b.used(), 60u);  // a refused take charges nothing
  EXPECT_TRUE(b.take(40));   // exactly at the limit
  EXPECT_EQ(b.used(), 100u);
  EXPECT_FALSE(b.take(1));
  EXPECT_TRUE(b.take(0));
  EXPECT_EQ(b.used(), 100u);
}

TEST(DecodeBudget, TakeCannotOverflow) {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  decode_budget b(1000);
  EXPECT_TRUE(b.take(10));
  EXPECT_FALSE(b.take(max));  // 10 + max wraps to 9: must still be refused
  EXPECT_FALSE(b.take(max - 5));
  EXPECT_EQ(b.used(), 10u);
  decode_budget unlimited(max);
  EXPECT_TRUE(unlimited.take(max - 1));
  EXPECT_TRUE(unlimited.take(1));
  EXPECT_FALSE(unlimited.take(1));
  EXPECT_EQ(unlimited.used(), max);
}

TEST(DecodeBudget, OverBudgetHasItsOwnErrorText) {
  EXPECT_EQ(to_string(decode_errc::over_budget),
            "decoded value needs more memory than the decode budget allows");
}

// ---------------------------------------------------------------------------------------------
// Attack shapes from issue 11 (class 2): small on the wire, large in memory. Each must stop at
// the budget, and the decode must allocate no more than the budget.

template <class T>
void expect_refused(const std::string& input, std::size_t limit) {
  T out{};
  decode_budget budget(limit);
  const measured m = decode_measured(input, out, budget);
  EXPECT_FALSE(m.refused) << "the decoder asked for more than the probe allows for a "
                          << input.size() << "-byte input";
  EXPECT_EQ(m.ec, decode_errc::over_budget) << to_string(m.ec);
  EXPECT_LE(budget.used(), budget.limit());
  EXPECT_LE(m.allocated, budget.used()) << "allocated more than was charged";
}

TEST(DecodeBudget, QuarterMebibyteOfEmptyOptionalPagesIsRefused) {
  // 256 KiB claiming 262,141 empty optional<array<uint8_t, 4096>>: 1 GiB without a budget.
  const std::string input = claim(256 * kib - 3, 256 * kib - 3);
  ASSERT_EQ(input.size(), 256 * kib);
  using page = std::optional<std::array<std::uint8_t, 4096>>;
  expect_refused<std::vector<page>>(input, mib);

  // The same in memory with a budget that does fit, to show the refusal above is the budget's
  // and not the input's: 64 entries of 4097 bytes.
  std::vector<page> out;
  decode_budget budget(mib);
  const measured m = decode_measured(claim(64, 64), out, budget);
  EXPECT_EQ(m.ec, decode_errc::ok);
  EXPECT_EQ(budget.used(), 64 * sizeof(page));
  EXPECT_EQ(m.allocated, 64 * sizeof(page));
}

TEST(DecodeBudget, VariantVectorIsRefused) {
  using page = std::variant<std::monostate, std::array<std::uint8_t, 4096>>;
  expect_refused<std::vector<page>>(claim(256 * kib - 3, 256 * kib - 3), mib);
}

TEST(DecodeBudget, VectorOfEmptyStringsIsRefused) {
  // One byte each on the wire, sizeof(std::string) == 32 each in memory: 8 MiB.
  expect_refused<std::vector<std::string>>(claim(256 * kib - 3, 256 * kib - 3), mib);
}

TEST(DecodeBudget, NestedVectorsAreChargedAtEveryLevel) {
  // The outer vector fits (4,096 × 24 bytes), the inner ones would not: each holds 60 empty
  // strings (60 × 32 bytes), so the budget runs out part-way through the elements.
  std::string input = claim(4096, 0);
  for (int i = 0; i < 4096; ++i) input += claim(60, 60);
  expect_refused<std::vector<std::vector<std::string>>>(input, mib);
}

TEST(DecodeBudget, BigStringIsRefusedBeforeItIsCopied) {
  const std::string input = to_bytes(std::string(200 * kib, 'x'));
  expect_refused<std::string>(input, 100 * kib);
}

TEST(DecodeBudget, MapAndSetNodesAreRefused) {
  // 5 wire bytes per entry (a distinct u32 key and an empty optional page), one 4 KiB node each.
  std::string map_input = claim(50'000, 0);
  for (std::uint32_t k = 0; k < 50'000; ++k) map_input += to_bytes(std::tuple{k, false});
  expect_refused<std::map<std::uint32_t, std::optional<std::array<std::uint8_t, 4096>>>>(map_input,
                                                                                         mib);
  expect_refused<std::unordered_map<std::uint32_t, std::optional<std::array<std::uint8_t, 4096>>>>(
      map_input, mib);

  // 1 wire byte per key, a 40-byte tree node each.
  std::string set_input = claim(256, 0);
  for (int k = 0; k < 256; ++k) set_input += static_cast<char>(k);
  expect_refused<std::set<std::uint8_t>>(set_input, 256 * 16);
  expect_refused<std::unordered_set<std::uint8_t>>(set_input, 256 * 16);
}

// ---------------------------------------------------------------------------------------------
// Accounting for ordinary values: never less than what is allocated, and not much more.

// Decodes value's encoding under a large budget and checks charged >= allocated; returns the
// charge.
template <class T>
std::size_t charged_for(const T& value, T& out) {
  const std::string bytes = to_bytes(value);
  decode_budget budget(64 * mib);
  const measured m = decode_measured(bytes, out, budget);
  EXPECT_EQ(m.ec, decode_errc::ok) << to_string(m.ec);
  EXPECT_FALSE(m.refused);
  EXPECT_GE(budget.used(), m.allocated) << "charged less than the decoder allocated";
  return budget.used();
}

template <class T>
std::size_t charged_for(const T& value) {
  T out{};
  return charged_for(value, out);
}

TEST(DecodeBudget, VectorOfStringsChargesWhatItAllocates) {
  const std::vector<std::string> value{"", "short", std::string(100, 'x'), std::string(1000, 'y')};
  std::vector<std::string> out;
  decode_budget budget(mib);
  const measured m = decode_measured(to_bytes(value), out, budget);
  ASSERT_EQ(m.ec, decode_errc::ok);
  ASSERT_EQ(out, value);
  // The vector's block, then the two strings past the 15-char SSO buffer (n + 1 each).
  const std::size_t allocated = 4 * sizeof(std::string) + 101 + 1001;
  EXPECT_EQ(m.allocated, allocated);
  EXPECT_EQ(m.allocations, 3u);
  // Charged: the same, each string rounded up to 16 bytes (112 and 1008).
  EXPECT_EQ(budget.used(), 4 * sizeof(std::string) + 112 + 1008);
  EXPECT_GE(budget.used(), m.allocated);
  EXPECT_LT(budget.used() - m.allocated, 2 * 16u);
}

TEST(DecodeBudget, EveryKindChargesAtLeastWhatItAllocates) {
  struct leaf {
    std::uint32_t id;
    std::string name;
    std::vector<std::int16_t> values;
    std::optional<std::string> note;
    bool operator==(const leaf&) const = default;
  };
  EXPECT_GT(charged_for(std::vector<std::uint16_t>(1000, 7)), 0u);
  EXPECT_GT(charged_for(std::vector<bool>(1000, true)), 0u);
  EXPECT_GT(charged_for(std::vector<std::vector<std::string>>{
                {"a", std::string(40, 'b')}, {}, {std::string(17, 'c')}}),
            0u);
  EXPECT_GT(charged_for(std::map<std::string, std::vector<std::string>>{
                {"k", {"v", std::string(30, 'w')}}, {std::string(20, 'K'), {}}}),
            0u);
  EXPECT_GT(charged_for(std::set<std::int32_t>{1, 2, 3, 4, 5}), 0u);
  EXPECT_GT(charged_for(std::set<std::string>{"a", std::string(50, 'z')}), 0u);
  EXPECT_GT(charged_for(std::unordered_map<std::string, std::int32_t>{
                {"a", 1}, {std::string(64, 'b'), 2}, {"c", 3}}),
            0u);
  EXPECT_GT(charged_for(std::unordered_set<std::uint64_t>{}), 0u);  // libstdc++ allocates buckets
  EXPECT_GT(charged_for(std::vector<leaf>{{1, std::string(33, 'n'), {1, 2}, std::string(90, 'm')},
                                          {2, "", {}, std::nullopt}}),
            0u);
  EXPECT_GT(
      charged_for(std::optional<std::variant<std::monostate, std::string, std::vector<double>>>{
          std::vector<double>{1.0, 2.0}}),
      0u);
  EXPECT_GT(charged_for(std::tuple<std::array<std::string, 2>, std::string>{
                {std::string(20, 'a'), "b"}, std::string(300, 'c')}),
            0u);
}

TEST(DecodeBudget, HashBucketEstimateCoversEverySize) {
  // The bucket array's size follows the implementation's prime table, so sweep the counts.
  for (std::uint32_t n = 0; n < 3000; n += (n < 100 ? 1 : 37)) {
    std::unordered_set<std::uint32_t> value;
    for (std::uint32_t k = 0; k < n; ++k) value.insert(k * 2654435761u);
    std::unordered_set<std::uint32_t> out;
    charged_for(value, out);
    ASSERT_FALSE(HasFailure()) << "n = " << n;
    ASSERT_EQ(out, value);
  }
}

TEST(DecodeBudget, ReusedCapacityIsNotChargedAgain) {
  const std::vector<std::string> value{std::string(100, 'a'), std::string(200, 'b'), "c"};
  std::vector<std::string> out;
  EXPECT_GT(charged_for(value, out), 0u);
  // Same shape again: the vector and every string already have the room, so nothing is
  // allocated and nothing is charged.
  EXPECT_EQ(charged_for(value, out), 0u);
  EXPECT_EQ(out, value);
}

TEST(DecodeBudget, GrowthIsChargedForTheNewSizeNotTheGrowthPolicy) {
  // 10 elements in a block of 10, decoded to 11: resize() would double the block to 20, so the
  // decoder allocates exactly 11 and charges those.
  std::vector<std::uint64_t> out(10, 1);
  out.shrink_to_fit();
  ASSERT_EQ(out.capacity(), 10u);
  decode_budget budget(mib);
  measured m = decode_measured(to_bytes(std::vector<std::uint64_t>(11, 2)), out, budget);
  ASSERT_EQ(m.ec, decode_errc::ok);
  EXPECT_EQ(m.allocated, 11 * sizeof(std::uint64_t));
  EXPECT_EQ(budget.used(), 11 * sizeof(std::uint64_t));

  // A string with room for 100 grown to 150: assign() would grow it to 200.
  std::string s(100, 's');
  s.shrink_to_fit();
  ASSERT_LT(s.capacity(), 150u);
  decode_budget string_budget(mib);
  m = decode_measured(to_bytes(std::string(150, 't')), s, string_budget);
  ASSERT_EQ(m.ec, decode_errc::ok);
  EXPECT_EQ(s, std::string(150, 't'));
  EXPECT_EQ(m.allocated, 151u);
  EXPECT_EQ(string_budget.used(), 160u);
}

// A comparator whose copy may throw makes std::set's move constructor noexcept(false) (libstdc++
// copies the comparator when moving a tree), so vector::reserve() copies such sets, and each
// copied node would be allocated outside the budget.
struct throwing_move_less {
  throwing_move_less() = default;
  throwing_move_less(const throwing_move_less&) noexcept(false) {}
  throwing_move_less(throwing_move_less&&) noexcept(false) {}
  throwing_move_less& operator=(const throwing_move_less&) = default;
  throwing_move_less& operator=(throwing_move_less&&) = default;
  bool operator()(std::int32_t a, std::int32_t b) const { return a < b; }
};

TEST(DecodeBudget, GrowingPastElementsThatCannotMoveSafelyDoesNotCopyThem) {
  using element = std::set<std::int32_t, throwing_move_less>;
  static_assert(!std::is_nothrow_move_constructible_v<element>);
  std::vector<element> out(2);
  for (std::int32_t i = 0; i < 50; ++i) {
    out[0].insert(i);
    out[1].insert(-i);
  }
  out.shrink_to_fit();
  const std::vector<element> value{{1}, {}, {2, 3}};
  decode_budget budget(mib);
  const measured m = decode_measured(to_bytes(value), out, budget);
  ASSERT_EQ(m.ec, decode_errc::ok);
  EXPECT_EQ(out, value);
  // The new block and the 3 new nodes; the 100 old nodes were not copied.
  EXPECT_LT(m.allocated, 3 * sizeof(element) + 3 * 64);
  EXPECT_GE(budget.used(), m.allocated);
}

TEST(DecodeBudget, ExactlyTheNeededBudgetPassesAndOneByteLessFails) {
  const std::map<std::string, std::vector<std::string>> value{
      {std::string(20, 'k'), {"v", std::string(30, 'w'), {}}}, {"x", {std::string(16, 'y')}}};
  const std::string bytes = to_bytes(value);
  const std::size_t needed = charged_for(value);
  ASSERT_GT(needed, 0u);

  std::map<std::string, std::vector<std::string>> out;
  decode_budget exact(needed);
  measured m = decode_measured(bytes, out, exact);
  EXPECT_EQ(m.ec, decode_errc::ok);
  EXPECT_EQ(exact.used(), needed);
  EXPECT_EQ(out, value);

  std::map<std::string, std::vector<std::string>> short_out;
  decode_budget one_less(needed - 1);
  m = decode_measured(bytes, short_out, one_less);
  EXPECT_EQ(m.ec, decode_errc::over_budget);
  EXPECT_LE(one_less.used(), one_less.limit());
  EXPECT_LE(m.allocated, one_less.used()) << "allocated past the failed charge";
}

TEST(DecodeBudget, ViewsAndScalarsChargeNothing) {
  const std::string payload(128, 'p');
  const std::string bytes = to_bytes(std::tuple{std::string_view(payload), std::int32_t{7},
                                                std::span<const std::byte>(), std::uint64_t{9}});
  std::tuple<std::string_view, std::int32_t, std::span<const std::byte>, std::uint64_t> out;
  decode_budget budget(0);  // nothing may be charged at all
  const measured m = decode_measured(bytes, out, budget);
  EXPECT_EQ(m.ec, decode_errc::ok);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(m.allocations, 0u);
  EXPECT_EQ(std::get<0>(out), payload);

  // A std::string that fits in the small-string buffer allocates nothing either.
  std::string small;
  decode_budget small_budget(0);
  EXPECT_EQ(decode_measured(to_bytes(std::string("fits inline")), small, small_budget).ec,
            decode_errc::ok);
  EXPECT_EQ(small, "fits inline");
}

TEST(DecodeBudget, DecodeFromChargesAcrossValues) {
  const std::string bytes =
      to_bytes(std::tuple{std::string(40, 'a'), std::string(40, 'b'), std::string(40, 'c')});
  reader r(bytes);
  decode_budget budget(2 * 48);  // room for two 41-byte strings (48 each), not three
  std::string a, b, c;
  EXPECT_EQ(decode_from(r, a, budget), decode_errc::ok);
  EXPECT_EQ(decode_from(r, b, budget), decode_errc::ok);
  EXPECT_EQ(budget.used(), 2 * 48u);
  EXPECT_EQ(decode_from(r, c, budget), decode_errc::over_budget);
  EXPECT_EQ(budget.used(), 2 * 48u);
  EXPECT_EQ(a, std::string(40, 'a'));
  EXPECT_EQ(b, std::string(40, 'b'));
}

TEST(DecodeBudget, PlainDecodeIsUnchanged) {
  // The budget-less overloads keep working and never report over_budget.
  const std::vector<std::string> value{"a", std::string(100, 'b')};
  std::vector<std::string> out;
  EXPECT_EQ(decode(to_bytes(value), out), decode_errc::ok);
  EXPECT_EQ(out, value);
}

}  // namespace
}  // namespace corvid::codec
