// bearer_token_provider: the header it adds, the refresh before expiry (calls never see a
// gap), a failed refresh keeping the old token until it expires, then unauthenticated with the
// fetch's message, and the first call waiting for the first fetch.
#include "corvid/client/bearer_token.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "eventually.hpp"
#include "slowdown.hpp"

namespace corvid::test {
namespace {

using namespace std::chrono_literals;

// The fetches a test scripts: fetch n (from 1) returns what `answer(n)` says.
struct script {
  std::atomic<int> n{0};
  std::function<expected<bearer_token, rpc_error>(int)> answer;
  bearer_token_provider::fetch_function fetch() {
    return [this] {
      return answer(++n);
    };
  }
};

// What one call gets: the authorization value, or the error.
expected<std::string, rpc_error> call(bearer_token_provider& p) {
  outgoing_call c("echo", 1);
  if (rpc_error e = p.on_call(c)) return unexpected(std::move(e));
  if (c.metadata().size() != 1) return unexpected(rpc_error(rpc_errc::internal, "entries"));
  EXPECT_EQ(c.metadata()[0].key, "authorization");
  return std::string(c.metadata()[0].value);
}

TEST(bearer_token_provider, first_call_waits_for_the_first_token) {
  script s;
  s.answer = [](int) {
    return bearer_token{"t1", 1h};
  };
  bearer_token_provider p(s.fetch());
  auto r = call(p);  // made at once: it waits for the fetch the constructor started
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "Bearer t1");
}

TEST(bearer_token_provider, refreshes_before_expiry) {
  script s;
  // Each token lives 1 s and is replaced after half of it: calls always find a valid one.
  s.answer = [](int n) {
    return bearer_token{"t" + std::to_string(n), patience(1s)};
  };
  bearer_token_provider p(s.fetch(), {.refresh_at = 0.5});
  ASSERT_TRUE(call(p));
  bool failed = false;
  EXPECT_TRUE(eventually(
      [&] {
        auto r = call(p);
        failed = failed || !r;
        return r && *r == "Bearer t3";
      },
      patience(5s)));
  EXPECT_FALSE(failed);
}

TEST(bearer_token_provider, failed_refresh_keeps_the_token_until_it_expires) {
  script s;
  s.answer = [](int n) -> expected<bearer_token, rpc_error> {
    if (n == 1) return bearer_token{"t1", patience(1s)};
    return unexpected(rpc_error(rpc_errc::connect_failed, "idp down"));
  };
  bearer_token_provider p(s.fetch(), {.refresh_at = 0.1, .min_backoff = 10ms});
  ASSERT_TRUE(call(p));
  // Refreshes failed (with back-off, more than once) while the token was still valid.
  ASSERT_TRUE(eventually([&] { return p.fetches() >= 3; }, patience(5s)));
  auto before = call(p);
  ASSERT_TRUE(before) << before.error().message();
  EXPECT_EQ(*before, "Bearer t1");
  // Then it expires: unauthenticated, saying why the refresh failed.
  ASSERT_TRUE(eventually([&] { return !call(p); }, patience(5s)));
  auto after = call(p);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code(), rpc_errc::unauthenticated);
  EXPECT_EQ(after.error().message(), "bearer token fetch failed: idp down");
}

// Many threads read the token while it is replaced under them: every call gets a whole one.
TEST(bearer_token_provider, concurrent_calls_during_refreshes) {
  script s;
  s.answer = [](int n) {
    return bearer_token{"token-" + std::to_string(n), patience(1s)};
  };
  bearer_token_provider p(s.fetch(), {.refresh_at = 0.01, .min_backoff = 1ms});
  ASSERT_TRUE(call(p));
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  const auto until = std::chrono::steady_clock::now() + patience(5s);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {  // until five tokens have been replaced under them
      while (p.fetches() < 6 && std::chrono::steady_clock::now() < until) {
        auto r = call(p);
        if (!r || !r->starts_with("Bearer token-")) bad.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(p.fetches(), 6u);
}

TEST(bearer_token_provider, no_token_at_all_is_unauthenticated) {
  script s;
  s.answer = [](int) -> expected<bearer_token, rpc_error> {
    throw std::runtime_error("no credentials file");
  };
  bearer_token_provider p(s.fetch());
  auto r = call(p);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), rpc_errc::unauthenticated);
  EXPECT_EQ(r.error().message(), "bearer token fetch failed: no credentials file");
}

}  // namespace
}  // namespace corvid::test
