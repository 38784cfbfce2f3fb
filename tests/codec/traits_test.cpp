// Compile-time contract: which types are encodable/decodable, owning_t, and the size bounds the
// decoder relies on. A failure here is a build error, which is the point.
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
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

struct plain {
  int a;
  std::string b;
};
struct with_pointer {
  int* p;
};
struct with_bad_nested {
  plain ok;
  std::vector<std::deque<int>> bad;
};
class with_private {
 public:
  int get() const { return x_; }

 private:
  int x_ = 0;
};
union number {
  int i;
  float f;
};
enum unscoped_unfixed { a, b };
enum class scoped { c };
enum unscoped_fixed : std::uint8_t { d };

// Supported, recursively.
static_assert(encodable<bool> && encodable<char> && encodable<std::uint64_t> && encodable<float>);
static_assert(encodable<double> && encodable<scoped> && encodable<unscoped_fixed>);
static_assert(encodable<std::byte> && encodable<char8_t> && encodable<char32_t>);
static_assert(encodable<std::string> && encodable<std::string_view>);
static_assert(encodable<std::vector<std::vector<std::string>>> && encodable<std::vector<bool>>);
static_assert(encodable<std::array<plain, 2>> && encodable<std::map<std::string, plain>>);
static_assert(encodable<std::unordered_map<int, std::optional<plain>>>);
static_assert(encodable<std::variant<std::monostate, int, plain>> && encodable<std::monostate>);
static_assert(encodable<std::tuple<>> && encodable<std::pair<int, plain>> && encodable<plain>);
static_assert(encodable<std::span<const int>> && encodable<std::span<const std::byte>>);
static_assert(encodable<const plain&> && encodable<std::tuple<int&, const std::string&>>);

// Not supported: a readable static_assert instead of a template error cascade.
static_assert(!encodable<int*> && !encodable<wchar_t> && !encodable<long double>);
static_assert(!encodable<unscoped_unfixed>);  // decoding into it could be UB
static_assert(!encodable<std::deque<int>> && !encodable<std::list<int>>);
static_assert(!encodable<std::multimap<int, int>> && !encodable<std::u16string>);
static_assert(!encodable<std::unique_ptr<int>> && !encodable<std::span<int>>);
static_assert(!encodable<with_pointer> && !encodable<with_bad_nested>);
static_assert(!encodable<std::vector<int*>> && !encodable<std::optional<std::deque<int>>>);
static_assert(!encodable<std::variant<int, std::list<int>>> && !encodable<std::tuple<int, int*>>);
static_assert(!encodable<with_private> && !encodable<number> && !encodable<const char*>);

// Decodable: no const anywhere, creatable elements, and no encode-only spans of non-bytes.
static_assert(decodable<plain> && decodable<std::string_view> && decodable<std::span<const char>>);
static_assert(decodable<std::span<const unsigned char>> &&
              decodable<std::tuple<int&, std::string&>>);
static_assert(!decodable<std::span<const int>> && !decodable<const int>);
static_assert(!decodable<std::tuple<const int>> && !decodable<std::array<const int, 2>>);
static_assert(!decodable<int*> && !decodable<int&>);

// owning_t
static_assert(std::is_same_v<owning_t<std::string_view>, std::string>);
static_assert(std::is_same_v<owning_t<const std::string_view&>, std::string>);
static_assert(std::is_same_v<owning_t<std::span<const int>>, std::vector<int>>);
static_assert(std::is_same_v<owning_t<std::span<const std::byte>>, std::vector<std::byte>>);
static_assert(std::is_same_v<owning_t<const plain&>, plain>);
static_assert(std::is_same_v<owning_t<std::vector<int>>, std::vector<int>>);

// Minimum sizes bound how many elements a count may claim.
static_assert(detail::min_encoded_size_v<std::uint32_t> == 4);
static_assert(detail::min_encoded_size_v<std::string> == 1);
static_assert(detail::min_encoded_size_v<plain> == 1);  // an older peer's plain may have no fields
static_assert(detail::min_encoded_size_v<std::monostate> == 0);
static_assert(detail::min_encoded_size_v<std::tuple<>> == 0);
static_assert(detail::min_encoded_size_v<std::array<std::uint16_t, 3>> == 6);
static_assert(detail::min_encoded_size_v<std::variant<std::monostate, double>> == 1);
static_assert(detail::fixed_encoded_size_v<std::pair<bool, std::array<std::uint16_t, 2>>> == 5);
static_assert(detail::fixed_encoded_size_v<plain> == detail::not_fixed);

TEST(Traits, CompileTimeContractHolds) { SUCCEED(); }

TEST(Traits, ErrorNamesAreStable) {
  EXPECT_EQ(to_string(decode_errc::ok), "ok");
  EXPECT_EQ(to_string(decode_errc::truncated), "truncated");
  EXPECT_EQ(to_string(decode_errc::invalid_value), "invalid_value");
  EXPECT_EQ(to_string(decode_errc::length_overflow), "length_overflow");
  EXPECT_EQ(to_string(decode_errc::unknown_alternative),
            "a variant alternative or enum value this build does not know (a newer peer's?)");
  EXPECT_EQ(to_string(decode_errc::trailing_bytes), "trailing_bytes");
  EXPECT_EQ(to_string(static_cast<decode_errc>(200)), "unknown");
}

}  // namespace
}  // namespace corvid::codec
