// Function ids: FNV-1a 32 of the handler's qualified name, computed at compile time. Both sides
// derive the id independently, so the name spelling and the hash are wire format.
#include <gtest/gtest.h>

#include "corvid/task.hpp"

#include "wire_util.hpp"

namespace corvid::protocol::test {
namespace {

// Published FNV-1a 32-bit vectors (offset basis 2166136261, prime 16777619).
static_assert(fnv1a32("") == 0x811c9dc5u);
static_assert(fnv1a32("a") == 0xe40c292cu);
static_assert(fnv1a32("foobar") == 0xbf9cf968u);
// Bytes are hashed unsigned: a sign-extended 0xff would give a different value.
static_assert(fnv1a32("\xff") == ((0x811c9dc5u ^ 0xffu) * 16777619u));

}  // namespace
}  // namespace corvid::protocol::test

// Handlers of every shape the server registers: free, namespaced, member (const, static,
// noexcept), with a request_context, and coroutines.
int free_fn(int x) { return x; }
namespace ns {
int f(int x) { return x; }
corvid::task<int> co(int x) { co_return x; }
namespace inner {
struct c {
  int m(int x) { return x; }
  int cm(int x) const noexcept { return x; }
  static int s(int x) { return x; }
  corvid::task<void> cv() { co_return; }
};
}  // namespace inner
}  // namespace ns
void with_ctx(corvid::request_context&, int) {}

namespace corvid::protocol::test {
namespace {

static_assert(function_name<free_fn>() == "free_fn");
static_assert(function_name<&free_fn>() == "free_fn");
static_assert(function_name<ns::f>() == "ns::f");
static_assert(function_name<ns::co>() == "ns::co");
static_assert(function_name<&ns::inner::c::m>() == "ns::inner::c::m");
static_assert(function_name<&ns::inner::c::cm>() == "ns::inner::c::cm");
static_assert(function_name<&ns::inner::c::s>() == "ns::inner::c::s");
static_assert(function_name<&ns::inner::c::cv>() == "ns::inner::c::cv");
static_assert(function_name<with_ctx>() == "with_ctx");
// The doc's examples.
static_assert(function_name<echo>() == "echo" && function_id<echo>() == 0xd49dd484u);
static_assert(function_name<store>() == "store" && function_id<store>() == 0xc7e7bc2eu);
static_assert(function_name<&ns::calc::add>() == "ns::calc::add");
static_assert(function_id<&ns::calc::add>() == 0x8ac991cau);
static_assert(function_id<&ns::calc::div>() == 0x50dfcefau);
static_assert(function_id<&ns::calc::mod>() == 0x71574c1du);

// Both compilers' spellings of __PRETTY_FUNCTION__ reduce to the same name, so a g++ client
// and a clang server agree on ids.
constexpr std::string_view gcc_free =
    "constexpr std::string_view corvid::protocol::detail::raw_function_signature() [with auto F "
    "= ns::echo; std::string_view = std::basic_string_view<char>]";
constexpr std::string_view gcc_member =
    "constexpr std::string_view corvid::protocol::detail::raw_function_signature() [with auto F "
    "= &ns::calc::add; std::string_view = std::basic_string_view<char>]";
constexpr std::string_view clang_free =
    "std::string_view corvid::protocol::detail::raw_function_signature() [F = &ns::echo]";
constexpr std::string_view clang_member =
    "std::string_view corvid::protocol::detail::raw_function_signature() [F = &ns::calc::add]";
static_assert(detail::extract_name(gcc_free) == "ns::echo");
static_assert(detail::extract_name(gcc_member) == "ns::calc::add");
static_assert(detail::extract_name(clang_free) == "ns::echo");
static_assert(detail::extract_name(clang_member) == "ns::calc::add");

// The same checks at run time, so they show up (and are counted) in the test report.
TEST(FunctionId, Fnv1aKnownVectors) {
  EXPECT_EQ(fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(fnv1a32("foobar"), 0xbf9cf968u);
}

TEST(FunctionId, NamesAreQualifiedWithoutDecoration) {
  EXPECT_EQ(function_name<free_fn>(), "free_fn");
  EXPECT_EQ(function_name<ns::f>(), "ns::f");
  EXPECT_EQ(function_name<&ns::inner::c::m>(), "ns::inner::c::m");
  EXPECT_EQ(function_name<&ns::inner::c::cm>(), "ns::inner::c::cm");
}

TEST(FunctionId, IdIsTheHashOfTheName) {
  EXPECT_EQ(function_id<echo>(), fnv1a32("echo"));
  EXPECT_EQ(function_id<&ns::calc::add>(), fnv1a32("ns::calc::add"));
  EXPECT_EQ(function_id<&ns::inner::c::s>(), fnv1a32("ns::inner::c::s"));
}

}  // namespace
}  // namespace corvid::protocol::test
