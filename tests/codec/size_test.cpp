// encoded_size() must equal the bytes encode() appends, for every kind, including encode-only
// types and values whose sizes straddle varint boundaries.
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
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "corvid/detail/byte_buffer.hpp"

#include "test_util.hpp"

namespace corvid::codec {
namespace {

struct record {
  std::uint32_t id;
  std::optional<std::string> name;
  std::vector<std::pair<std::uint8_t, std::string>> attrs;
};

template <class T>
void expect_exact_size(const T& value) {
  corvid::detail::byte_buffer buf;
  encode(buf, value);
  EXPECT_EQ(encoded_size(value), buf.size()) << test::hex(buf.view());
  EXPECT_EQ(test::to_bytes(value), buf.view());
}

template <class... Ts>
void expect_exact_sizes(const Ts&... values) {
  (expect_exact_size(values), ...);
}

TEST(EncodedSize, MatchesEncodeForEveryKind) {
  const std::vector<int> ints{1, 2, 3};
  const std::vector<std::string> strings{"a", "bb"};
  const std::string text = "hello";
  expect_exact_sizes(true, 'c', std::int8_t{1}, std::uint16_t{2}, 3, 4ull, 5.0f, 6.0, std::byte{7});
  expect_exact_sizes(std::string(), text, std::string_view(text), std::span<const char>(text));
  expect_exact_sizes(ints, strings, std::vector<bool>{true, false}, std::span<const int>(ints),
                     std::span<const std::string>(strings));
  expect_exact_sizes(std::array<int, 2>{}, std::array<std::string, 2>{"x", "yz"},
                     std::array<std::monostate, 4>{});
  expect_exact_sizes(std::map<int, std::string>{{1, "a"}},
                     std::unordered_map<std::string, int>{{"k", 1}},
                     std::set<std::string>{"a", "b"}, std::unordered_set<int>{1, 2, 3});
  expect_exact_sizes(std::optional<int>{}, std::optional<std::string>{"abc"});
  expect_exact_sizes(std::variant<std::monostate, std::string>{},
                     std::variant<std::monostate, std::string>{"xyz"});
  expect_exact_sizes(std::monostate{}, std::tuple<>{}, std::tuple<int, std::string>{1, "s"},
                     std::pair<bool, std::vector<int>>{true, {1}});
  expect_exact_sizes(record{}, record{7, "seven", {{1, "a"}, {2, ""}}});
  expect_exact_sizes(std::vector<record>{record{}, record{1, std::nullopt, {{3, "c"}}}});
}

TEST(EncodedSize, AcrossVarintBoundaries) {
  for (const std::size_t n : {0u, 1u, 127u, 128u, 16383u, 16384u, 70000u}) {
    expect_exact_size(std::string(n, 'a'));
    expect_exact_size(std::vector<std::uint8_t>(n, 1));
    expect_exact_size(std::vector<std::string>(n % 300, "ab"));
    expect_exact_size(std::vector<bool>(n, true));
  }
}

}  // namespace
}  // namespace corvid::codec
