// The client's call table: ids pack a generation over a slot index, id 0 is never issued, an
// id stops matching once its call is taken (so a late or duplicate reply finds nothing), and
// freed slots are reused, the most recently freed first.
#include "client/call_table.hpp"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "test_call.hpp"

namespace corvid_test {
namespace {

using corvid::detail::call_base;
using corvid::detail::call_table;

std::uint32_t index_of(std::uint64_t id) { return static_cast<std::uint32_t>(id); }
std::uint32_t generation_of(std::uint64_t id) { return static_cast<std::uint32_t>(id >> 32); }

TEST(call_table, ids_pack_generation_over_slot) {
  call_table t;
  test_call a, b;
  t.insert(&a);
  t.insert(&b);
  EXPECT_EQ(a.slot().id, std::uint64_t{1} << 32);  // slot 0, generation 1: not 0
  EXPECT_EQ(b.slot().id, (std::uint64_t{1} << 32) | 1);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.take(b.slot().id), &b);
  EXPECT_EQ(t.take(a.slot().id), &a);
  EXPECT_EQ(t.size(), 0u);
}

TEST(call_table, id_zero_never_issued_nor_matched) {
  call_table t;
  std::vector<test_call> calls(64);
  for (int round = 0; round < 100; ++round) {
    for (auto& c : calls) {
      t.insert(&c);
      EXPECT_NE(c.slot().id, 0u);
      EXPECT_NE(generation_of(c.slot().id), 0u);
    }
    EXPECT_EQ(t.take(0), nullptr);  // slot 0 holds a call, but id 0 is not its id
    for (auto& c : calls) ASSERT_EQ(t.take(c.slot().id), &c);
  }
}

TEST(call_table, generation_wraps_past_zero) {
  // A slot goes through 2^32 - 1 generations before its ids repeat; 0 is skipped on the way.
  EXPECT_EQ(call_table::next_generation(1), 2u);
  EXPECT_EQ(call_table::next_generation(UINT32_MAX - 1), UINT32_MAX);
  EXPECT_EQ(call_table::next_generation(UINT32_MAX), 1u);
  static_assert(call_table::next_generation(UINT32_MAX) != 0);
}

TEST(call_table, taken_id_no_longer_matches) {
  call_table t;
  test_call a;
  t.insert(&a);
  const std::uint64_t id = a.slot().id;
  EXPECT_EQ(t.take(id), &a);
  EXPECT_EQ(t.take(id), nullptr);  // a duplicate reply
  EXPECT_EQ(t.size(), 0u);
}

TEST(call_table, stale_id_refused_after_slot_reuse) {
  call_table t;
  test_call a, b;
  t.insert(&a);
  const std::uint64_t stale = a.slot().id;
  ASSERT_EQ(t.take(stale), &a);
  t.insert(&b);
  EXPECT_EQ(index_of(b.slot().id), index_of(stale));                // the same slot ...
  EXPECT_EQ(generation_of(b.slot().id), generation_of(stale) + 1);  // ... under the next generation
  EXPECT_EQ(t.take(stale), nullptr);  // a late reply to `a` must not end `b`
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.take(b.slot().id), &b);
}

TEST(call_table, unknown_ids_match_nothing) {
  call_table t;
  test_call a;
  t.insert(&a);
  EXPECT_EQ(t.take(a.slot().id + 1), nullptr);                         // a slot never used
  EXPECT_EQ(t.take(a.slot().id + (std::uint64_t{1} << 32)), nullptr);  // a future generation
  EXPECT_EQ(t.take(UINT64_MAX), nullptr);
  EXPECT_EQ(t.size(), 1u);
}

TEST(call_table, freed_slots_reused_last_freed_first) {
  call_table t;
  test_call c[4];
  for (int i = 0; i < 3; ++i) t.insert(&c[i]);
  ASSERT_EQ(t.take(c[1].slot().id), &c[1]);
  ASSERT_EQ(t.take(c[0].slot().id), &c[0]);
  t.insert(&c[3]);
  EXPECT_EQ(index_of(c[3].slot().id), 0u);
  t.insert(&c[0]);
  EXPECT_EQ(index_of(c[0].slot().id), 1u);
  t.insert(&c[1]);
  EXPECT_EQ(index_of(c[1].slot().id), 3u);  // no slot free: a new one
  EXPECT_EQ(t.size(), 4u);
}

TEST(call_table, for_each_visits_filed_calls_in_slot_order) {
  call_table t;
  test_call c[4];
  for (auto& x : c) t.insert(&x);
  ASSERT_EQ(t.take(c[2].slot().id), &c[2]);
  std::vector<const call_base*> seen;
  t.for_each([&](const call_base* call) { seen.push_back(call); });
  EXPECT_EQ(seen, (std::vector<const call_base*>{&c[0], &c[1], &c[3]}));
  EXPECT_EQ(t.size(), 3u);  // visiting takes nothing
}

TEST(call_table, take_all_empties_and_retires_every_id) {
  call_table t;
  test_call c[3];
  for (auto& x : c) t.insert(&x);
  ASSERT_EQ(t.take(c[1].slot().id), &c[1]);
  const std::uint64_t ids[] = {c[0].slot().id, c[2].slot().id};
  std::vector<call_base*> taken;
  t.take_all([&](call_base* call) { taken.push_back(call); });
  EXPECT_EQ(taken, (std::vector<call_base*>{&c[0], &c[2]}));
  EXPECT_EQ(t.size(), 0u);
  for (std::uint64_t id : ids) EXPECT_EQ(t.take(id), nullptr);
  for (auto& x : c) t.insert(&x);  // the three slots are reused, none added
  for (auto& x : c) EXPECT_LT(index_of(x.slot().id), 3u);
  for (std::uint64_t id : ids) EXPECT_EQ(t.take(id), nullptr);  // still stale
}

}  // namespace
}  // namespace corvid_test
