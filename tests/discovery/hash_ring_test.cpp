// The consistent-hash ring alone: key movement when one endpoint leaves, spread, and
// independence from the order endpoints were learned in (two clients agree).
#include "client/hash_ring.hpp"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

using corvid::detail::hash_ring;

std::vector<std::string> ids(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("instance-" + std::to_string(i * 7919 + 13));
  return out;
}

std::vector<std::string> owners(const hash_ring& ring, const std::vector<std::string>& ids,
                                int keys) {
  std::vector<std::string> out;
  for (int k = 0; k < keys; ++k) {
    out.push_back(
        ids[static_cast<std::size_t>(ring.owner(hash_ring::hash("user:" + std::to_string(k))))]);
  }
  return out;
}

TEST(hash_ring, removing_one_of_n_moves_only_its_keys) {
  constexpr int keys = 100'000;
  for (int n : {3, 5, 10, 20}) {
    auto all = ids(n);
    hash_ring before;
    before.build(all);
    const auto owner_before = owners(before, all, keys);
    for (int leaving = 0; leaving < n; ++leaving) {
      auto rest = all;
      rest.erase(rest.begin() + leaving);
      hash_ring after;
      after.build(rest);
      const auto owner_after = owners(after, rest, keys);
      int moved = 0;
      for (int k = 0; k < keys; ++k) {
        if (owner_before[k] == owner_after[k]) continue;
        ++moved;
        // Only the leaving endpoint's keys may move.
        ASSERT_EQ(owner_before[k], all[static_cast<std::size_t>(leaving)]) << "key " << k;
      }
      EXPECT_LE(static_cast<double>(moved) / keys, 1.0 / n + 0.02)
          << n << " endpoints, removing " << leaving;
    }
  }
}

TEST(hash_ring, spreads_keys_near_evenly) {
  constexpr int keys = 100'000, n = 10;
  auto all = ids(n);
  hash_ring ring;
  ring.build(all);
  std::map<std::string, int> count;
  for (const auto& o : owners(ring, all, keys)) ++count[o];
  ASSERT_EQ(count.size(), static_cast<std::size_t>(n));
  for (const auto& [id, c] : count) {
    EXPECT_GT(c, keys / n * 0.7) << id;
    EXPECT_LT(c, keys / n * 1.3) << id;
  }
}

TEST(hash_ring, order_of_endpoints_does_not_matter) {
  auto all = ids(8);
  hash_ring a;
  a.build(all);
  auto shuffled = all;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(42));
  hash_ring b;
  b.build(shuffled);
  EXPECT_EQ(owners(a, all, 10'000), owners(b, shuffled, 10'000));
}

TEST(hash_ring, walk_skips_refused_endpoints_to_the_next_on_the_ring) {
  auto all = ids(4);
  hash_ring ring;
  ring.build(all);
  for (int k = 0; k < 1000; ++k) {
    const auto h = hash_ring::hash("k" + std::to_string(k));
    const auto first = ring.owner(h);
    const auto next =
        ring.find(h, [&](std::size_t i) { return static_cast<std::ptrdiff_t>(i) != first; });
    ASSERT_GE(next, 0);
    EXPECT_NE(next, first);
  }
  EXPECT_EQ(ring.find(1, [](std::size_t) { return false; }), -1);
  hash_ring empty;
  EXPECT_EQ(empty.owner(1), -1);
}

}  // namespace

namespace {

// Many endpoints share a bounded ring: its memory does not grow as points x endpoints.
TEST(hash_ring, many_endpoints_share_a_bounded_ring) {
  using corvid::detail::hash_ring;
  EXPECT_EQ(hash_ring::points_for(3), hash_ring::points_per_endpoint);
  EXPECT_EQ(hash_ring::points_for(128), hash_ring::points_per_endpoint);
  EXPECT_EQ(hash_ring::points_for(129), hash_ring::points_per_endpoint / 2);
  std::vector<std::string> ids;
  for (int i = 0; i < 10000; ++i) ids.push_back("instance-" + std::to_string(i));
  hash_ring ring;
  ring.build(ids);
  EXPECT_LE(ring.size(), 10000 * hash_ring::min_points_per_endpoint + hash_ring::max_points);
  ids.resize(2048);
  ring.build(ids);
  EXPECT_LE(ring.size(), hash_ring::max_points);
  // Every endpoint still owns some keys.
  std::vector<int> owned(ids.size());
  for (int k = 0; k < 200000; ++k) {
    ++owned[static_cast<std::size_t>(ring.owner(hash_ring::hash("key:" + std::to_string(k))))];
  }
  EXPECT_EQ(std::count(owned.begin(), owned.end(), 0), 0);
}

}  // namespace
