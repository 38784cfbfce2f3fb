// The client's call table and each call's slot in it. The table: ids pack a generation over a
// slot index, id 0 is never issued, an id stops matching once its call is taken (so a late or
// duplicate reply finds nothing), and freed slots are reused, the most recently freed first.
// The slot: the public call record names none of the connection's fields (they live in a
// private area only the client's internals read, as a call_slot), a fresh call's slot is empty,
// and a stream's slot carries the credit it grants beyond the initial window.
#include "client/call_table.hpp"

#include <chrono>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/client/stream_call.hpp>

#include "test_call.hpp"

namespace corvid_test {
namespace {

using corvid::detail::call_base;
using corvid::detail::call_slot;
using corvid::detail::call_table;
using corvid::detail::slot_of;

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

template <class C>
concept names_connection_fields =
    requires(C& c) { c.id; } || requires(C& c) { c.seq; } || requires(C& c) { c.deadline; } ||
    requires(C& c) { c.next; } || requires(C& c) { c.timed; } || requires(C& c) { c.pinned; } ||
    requires(C& c) { c.parked; } || requires(C& c) { c.extra_credit; } ||
    requires(C& c) { c.call_stats; };
static_assert(!names_connection_fields<call_base>,
              "the public call record holds only the caller's side of a call");
static_assert(!names_connection_fields<corvid::detail::client_stream>);
static_assert(names_connection_fields<call_slot>);  // the check can fail

TEST(call_slot, a_fresh_call_has_an_empty_slot) {
  test_call c;
  const call_slot& s = slot_of(c);
  EXPECT_EQ(s.id, 0u);
  EXPECT_EQ(s.seq, 0u);
  EXPECT_EQ(s.deadline, std::chrono::steady_clock::time_point{});
  EXPECT_EQ(s.prev, nullptr);
  EXPECT_EQ(s.next, nullptr);
  EXPECT_EQ(s.parked, nullptr);
  EXPECT_EQ(s.call_stats, nullptr);
  EXPECT_EQ(s.extra_credit, 0u);
  EXPECT_FALSE(s.timed);
  EXPECT_FALSE(s.pinned);
  EXPECT_FALSE(s.completion_deferred);
  EXPECT_FALSE(c.trace().has_value());
}

TEST(call_slot, a_stream_grants_its_window_beyond_the_initial_credit) {
  constexpr std::size_t initial = corvid::protocol::initial_stream_credit;
  auto* wide = new corvid::detail::client_stream(nullptr, false, initial + 4096, 1u << 30);
  EXPECT_EQ(slot_of(*wide).extra_credit, 4096u);
  EXPECT_FALSE(wide->filed());
  slot_of(*wide).id = std::uint64_t{1} << 32;  // what the call table does
  EXPECT_TRUE(wide->filed());
  wide->release();
  auto* narrow = new corvid::detail::client_stream(nullptr, false, initial, initial);
  EXPECT_EQ(slot_of(*narrow).extra_credit, 0u);
  narrow->release();
}

}  // namespace
}  // namespace corvid_test
