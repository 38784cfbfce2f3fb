// The call record and its slot: the public call record names none of the connection's fields
// (they live in a private area only the client's internals read, as a call_slot), a fresh
// call's slot is empty, and a stream's slot carries the credit it grants beyond the initial
// window.
#include "client/call_slot.hpp"

#include <chrono>
#include <cstdint>

#include <gtest/gtest.h>

#include <corvid/client/stream_call.hpp>

#include "test_call.hpp"

namespace corvid_test {
namespace {

using corvid::detail::call_base;
using corvid::detail::call_slot;
using corvid::detail::slot_of;

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
