// Signature fingerprints: what changes them (the parameter list, a parameter's or the result's
// wire type, a frozen struct's fields) and what does not (fields appended to an evolvable
// struct, a type swapped for one with the same wire format).
#include "corvid/protocol/signature.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "corvid/codec/layout.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/task.hpp"

namespace sig {

// Two versions of an evolvable struct, with the same qualified name as each build sees it;
// distinct namespaces here stand for the two builds.
namespace v1 {
struct user {
  std::uint32_t id;
};
}  // namespace v1
namespace v2 {
struct user {
  std::uint32_t id;
  std::string name;
};
}  // namespace v2
struct frozen_a {
  using codec_layout = corvid::codec::frozen;
  std::uint32_t x;
};
struct frozen_b {
  using codec_layout = corvid::codec::frozen;
  std::uint64_t x;
};
enum class color : std::uint8_t { red };

inline int f_int(int a) { return a; }
inline int f_int_again(int b) { return b; }
inline std::int64_t f_int64(std::int64_t a) { return a; }
inline int f_two(int a, int b) { return a + b; }
inline void f_void(int) {}
inline std::string f_string(std::string s) { return s; }
inline std::string_view f_view(std::string_view s) { return s; }
inline corvid::task<std::string> f_task(corvid::request_context&, const std::string& s) {
  co_return s;
}
inline std::map<int, std::string> f_map(std::vector<char> v) { return {{0, {v.begin(), v.end()}}}; }
inline std::unordered_map<int, std::string> f_umap(std::string s) { return {{0, s}}; }
inline int f_variant(std::variant<int, std::string>) { return 0; }
inline int f_variant_grown(std::variant<int, std::string, double>) { return 0; }
inline int f_color(color) { return 0; }

}  // namespace sig

namespace corvid::protocol {
namespace {

// The canonical form of a type, as a fingerprint of a function returning void.
template <class... Params>
constexpr std::uint16_t of() {
  return detail::fingerprint<std::tuple<Params...>, void>();
}

TEST(Signature, SameWireTypesAgree) {
  static_assert(signature_v<sig::f_int> == signature_v<sig::f_int_again>);  // names don't count
  // string, string_view, const string& and a coroutine's task<string> are all bytes; the
  // request_context parameter does not travel.
  static_assert(signature_v<sig::f_string> == signature_v<sig::f_view>);
  static_assert(signature_v<sig::f_string> == signature_v<sig::f_task>);
  // vector<char> has a string's bytes, and both map kinds have the same wire format.
  static_assert(signature_v<sig::f_map> == signature_v<sig::f_umap>);
  EXPECT_NE(signature_v<sig::f_int>, 0);
}

TEST(Signature, ChangedSignaturesDiffer) {
  static_assert(signature_v<sig::f_int> != signature_v<sig::f_int64>);  // retyped
  static_assert(signature_v<sig::f_int> != signature_v<sig::f_two>);    // parameter added
  static_assert(signature_v<sig::f_int> != signature_v<sig::f_void>);   // result changed
  static_assert(signature_v<sig::f_variant> != signature_v<sig::f_variant_grown>);
  static_assert(of<std::int32_t>() != of<std::uint32_t>());
  static_assert(of<std::int32_t, std::string>() != of<std::string, std::int32_t>());  // reordered
  static_assert(of<std::vector<int>>() != of<std::optional<int>>());
  static_assert(of<sig::frozen_a>() != of<sig::frozen_b>());  // a frozen struct's fields count
  static_assert(of<sig::color>() != of<std::uint8_t>());
}

TEST(Signature, EvolvableStructsCountByNameOnly) {
  // v1::user and v2::user differ in name only because they stand for two builds; the form
  // names the struct and nothing inside it.
  EXPECT_EQ(detail::type_name<sig::v1::user>(), "sig::v1::user");
  static_assert(of<sig::v1::user>() != of<sig::v2::user>());  // another name
  static_assert(of<std::vector<sig::v1::user>>() != of<sig::v1::user>());
}

}  // namespace
}  // namespace corvid::protocol
