// The connection's index of running coroutine calls: found by request id, duplicates refused, and
// every call still found after any sequence of inserts and erases (the backward-shift deletion must
// never cut a probe run).
#include "server/running_calls.hpp"

#include <algorithm>
#include <deque>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/detail/reply_sink.hpp>
#include <corvid/server/request_context.hpp>

namespace corvid_test {
namespace {

using corvid::request_context;
using corvid::detail::running_calls;

// Contexts need a reply sink to be constructed; the index never uses it.
struct null_sink final : corvid::detail::reply_sink {
  corvid::detail::outbound_queue* begin_reply(std::uint64_t, std::size_t) override {
    return nullptr;
  }
  void end_reply(request_context*, std::uint8_t) override {}
  void reply_error(std::uint64_t, corvid::rpc_errc, std::string_view) override {}
  asio::io_context& reactor() noexcept override { return io; }
  std::string peer_address() const override { return {}; }
  asio::io_context io;
};

struct contexts {
  null_sink sink;
  std::deque<request_context> all;
  request_context* make(std::uint64_t id) {
    return &all.emplace_back(sink, id, 0, std::string_view{});
  }
};

bool insert(running_calls& r, request_context* c) {
  r.reserve_one();
  return r.insert(c);
}

TEST(running_calls, finds_inserted_calls_and_refuses_duplicate_ids) {
  contexts ctx;
  running_calls r;
  EXPECT_EQ(r.find(7), nullptr);
  auto* a = ctx.make(7);
  auto* b = ctx.make(8);
  EXPECT_TRUE(insert(r, a));
  EXPECT_TRUE(insert(r, b));
  EXPECT_FALSE(insert(r, ctx.make(7))) << "a second call with a running call's id";
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r.find(7), a);
  EXPECT_EQ(r.find(8), b);
  EXPECT_EQ(r.find(9), nullptr);
  r.erase(a);
  EXPECT_EQ(r.find(7), nullptr);
  EXPECT_EQ(r.find(8), b);
  EXPECT_TRUE(insert(r, ctx.make(7))) << "an id is free again once its call ended";
}

TEST(running_calls, insert_without_reserve_one_refuses_instead_of_allocating) {
  contexts ctx;
  running_calls r;
  EXPECT_FALSE(r.insert(ctx.make(1)));  // no table yet: insert is noexcept, so it cannot grow
  EXPECT_EQ(r.size(), 0u);
}

TEST(running_calls, random_inserts_and_erases_match_a_reference_set) {
  // The client's ids (generation << 32 | slot) and random ones, so probe runs collide, wrap
  // around the table's end, and get holes punched in them by erase.
  std::mt19937_64 rng(42);
  contexts ctx;
  running_calls r;
  std::vector<request_context*> live;
  for (int step = 0; step < 200'000; ++step) {
    const bool add = live.empty() || (live.size() < 3000 && rng() % 3 != 0);
    if (add) {
      const std::uint64_t id =
          rng() % 2 == 0 ? (std::uint64_t{1 + rng() % 4} << 32 | rng() % 4096) : rng();
      auto* c = ctx.make(id);
      const bool fresh = std::none_of(live.begin(), live.end(),
                                      [&](request_context* l) { return l->request_id() == id; });
      ASSERT_EQ(insert(r, c), fresh);
      if (fresh) live.push_back(c);
    } else {
      const std::size_t i = rng() % live.size();
      r.erase(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    ASSERT_EQ(r.size(), live.size());
    if (step % 97 == 0) {
      for (request_context* c : live) ASSERT_EQ(r.find(c->request_id()), c) << "step " << step;
      std::size_t seen = 0;
      r.for_each([&](request_context*) { ++seen; });
      ASSERT_EQ(seen, live.size());
    }
  }
}

}  // namespace
}  // namespace corvid_test
