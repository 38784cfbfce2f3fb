// expected<T, E> / expected<void, E>: the result type of every call.
#include "corvid/expected.hpp"

#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "corvid/error.hpp"

namespace corvid {
namespace {

TEST(Expected, HoldsValue) {
  expected<int, rpc_error> e = 7;
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(static_cast<bool>(e));
  EXPECT_EQ(e.value(), 7);
  EXPECT_EQ(*e, 7);
  e.value() = 8;
  EXPECT_EQ(*e, 8);
}

TEST(Expected, DefaultConstructsValue) {
  expected<std::string, rpc_error> e;
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(*e, "");
}

TEST(Expected, HoldsError) {
  expected<int, rpc_error> e = unexpected(rpc_error(rpc_errc::timeout, "too slow"));
  ASSERT_FALSE(e.has_value());
  EXPECT_FALSE(static_cast<bool>(e));
  EXPECT_TRUE(e.error() == rpc_errc::timeout);
  EXPECT_EQ(e.error().message(), "too slow");
}

TEST(Expected, ArrowAndMoveOut) {
  expected<std::string, rpc_error> e = std::string("abc");
  EXPECT_EQ(e->size(), 3u);
  expected<std::unique_ptr<int>, rpc_error> p = std::make_unique<int>(5);
  std::unique_ptr<int> owned = std::move(p).value();
  ASSERT_NE(owned, nullptr);
  EXPECT_EQ(*owned, 5);
  rpc_error err =
      std::move(expected<int, rpc_error>(unexpected(rpc_error(rpc_errc::cancelled)))).error();
  EXPECT_TRUE(err == rpc_errc::cancelled);
}

TEST(Expected, ValueOr) {
  const expected<int, rpc_error> ok = 3;
  const expected<int, rpc_error> bad = unexpected(rpc_error(rpc_errc::connection_closed));
  EXPECT_EQ(ok.value_or(9), 3);
  EXPECT_EQ(bad.value_or(9), 9);
  const expected<std::string, rpc_error> s = unexpected(rpc_error(rpc_errc::bad_request));
  EXPECT_EQ(s.value_or("fallback"), "fallback");  // converts the fallback to T
}

// Same T and E must still tell value from error.
TEST(Expected, SameValueAndErrorType) {
  expected<int, int> v = 1;
  expected<int, int> e = unexpected(2);
  EXPECT_TRUE(v.has_value());
  EXPECT_EQ(*v, 1);
  EXPECT_FALSE(e.has_value());
  EXPECT_EQ(e.error(), 2);
}

TEST(ExpectedVoid, SuccessAndError) {
  expected<void, rpc_error> ok;
  EXPECT_TRUE(ok.has_value());
  EXPECT_TRUE(static_cast<bool>(ok));
  ok.value();  // no-op on success
  *ok;

  expected<void, rpc_error> bad = unexpected(rpc_error(rpc_errc::handler_error, "oops"));
  EXPECT_FALSE(bad.has_value());
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_TRUE(bad.error() == rpc_errc::handler_error);
  EXPECT_EQ(bad.error().message(), "oops");
  rpc_error moved = std::move(bad).error();
  EXPECT_EQ(moved.message(), "oops");
}

}  // namespace
}  // namespace corvid
