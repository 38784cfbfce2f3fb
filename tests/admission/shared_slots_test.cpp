// shared_slots on its own: the total, the per-peer share, and places given back on release.
#include "admission/shared_slots.hpp"

#include <vector>

#include <gtest/gtest.h>

namespace corvid::detail {
namespace {

TEST(shared_slots, one_peer_takes_at_most_its_share) {
  auto slots = shared_slots::make(10, 3);
  std::vector<std::unique_ptr<shared_slots::ticket>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(slots->take("10.0.0.1"));
    ASSERT_NE(held.back(), nullptr);
  }
  EXPECT_EQ(slots->take("10.0.0.1"), nullptr);
  EXPECT_EQ(slots->held_by("10.0.0.1"), 3u);
  EXPECT_EQ(slots->in_use(), 3u);  // the refused one holds nothing
  EXPECT_NE(slots->take("10.0.0.2"), nullptr);
}

TEST(shared_slots, no_crowd_takes_more_than_the_total) {
  auto slots = shared_slots::make(4, 3);
  std::vector<std::unique_ptr<shared_slots::ticket>> held;
  for (int i = 0; i < 4; ++i) held.push_back(slots->take("10.0.0." + std::to_string(i)));
  EXPECT_EQ(slots->take("10.0.0.9"), nullptr);
  EXPECT_EQ(slots->in_use(), 4u);
}

TEST(shared_slots, a_place_is_free_the_moment_its_ticket_goes) {
  auto slots = shared_slots::make(2, 1);
  auto a = slots->take("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(slots->take("a"), nullptr);
  a.reset();
  EXPECT_EQ(slots->in_use(), 0u);
  EXPECT_EQ(slots->held_by("a"), 0u);
  EXPECT_NE(slots->take("a"), nullptr);
}

TEST(shared_slots, tickets_keep_their_pool_alive) {
  auto slots = shared_slots::make(1, 1);
  auto t = slots->take("a");
  slots.reset();
  t.reset();  // no use after free (ASan)
  SUCCEED();
}

}  // namespace
}  // namespace corvid::detail
