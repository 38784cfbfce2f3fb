// The client's deadline list: kept sorted by deadline whatever the insertion order, equal
// deadlines in insertion order, unlinking from anywhere leaves a consistent list, and expired
// calls pop earliest first.
#include "client/deadline_list.hpp"

#include <chrono>
#include <vector>

#include <gtest/gtest.h>

#include "test_call.hpp"

namespace corvid_test {
namespace {

using corvid::detail::call_base;
using corvid::detail::deadline_list;
using corvid::detail::slot_of;
using std::chrono::milliseconds;

const deadline_list::time_point t0{std::chrono::hours(1)};

// The calls from head to tail, checking every back link on the way.
std::vector<call_base*> walk(const deadline_list& l) {
  std::vector<call_base*> out;
  call_base* prev = nullptr;
  for (call_base* c = l.head(); c != nullptr; c = slot_of(*c).next) {
    EXPECT_EQ(slot_of(*c).prev, prev);
    EXPECT_TRUE(slot_of(*c).timed);
    if (prev != nullptr) {
      EXPECT_LE(slot_of(*prev).deadline, slot_of(*c).deadline);
    }
    out.push_back(c);
    prev = c;
  }
  return out;
}

TEST(deadline_list, empty) {
  deadline_list l;
  EXPECT_EQ(l.head(), nullptr);
  EXPECT_EQ(l.earliest(), deadline_list::time_point::max());
  EXPECT_EQ(l.pop_expired(deadline_list::time_point::max()), nullptr);
}

TEST(deadline_list, sorted_whatever_the_insertion_order) {
  deadline_list l;
  test_call c[5];
  const int ms[] = {30, 10, 50, 20, 40};  // the tail, the head, the tail, the middle ...
  for (int i = 0; i < 5; ++i) l.insert(&c[i], t0 + milliseconds(ms[i]));
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&c[1], &c[3], &c[0], &c[4], &c[2]}));
  EXPECT_EQ(l.earliest(), t0 + milliseconds(10));
  EXPECT_EQ(c[2].slot().deadline, t0 + milliseconds(50));
}

TEST(deadline_list, equal_deadlines_keep_insertion_order) {
  deadline_list l;
  test_call c[6];
  l.insert(&c[0], t0 + milliseconds(5));
  l.insert(&c[1], t0 + milliseconds(5));
  l.insert(&c[2], t0 + milliseconds(9));
  l.insert(&c[3], t0 + milliseconds(5));  // walks back past the later one, stops at its equals
  l.insert(&c[4], t0);
  l.insert(&c[5], t0);
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&c[4], &c[5], &c[0], &c[1], &c[3], &c[2]}));
}

TEST(deadline_list, unlink_head_middle_and_tail) {
  deadline_list l;
  test_call c[5];
  for (int i = 0; i < 5; ++i) l.insert(&c[i], t0 + milliseconds(i));
  l.unlink(&c[2]);  // middle
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&c[0], &c[1], &c[3], &c[4]}));
  l.unlink(&c[0]);  // head
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&c[1], &c[3], &c[4]}));
  l.unlink(&c[4]);  // tail
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&c[1], &c[3]}));
  for (int i : {0, 2, 4}) {
    EXPECT_FALSE(c[i].slot().timed);
    EXPECT_EQ(c[i].slot().prev, nullptr);
    EXPECT_EQ(c[i].slot().next, nullptr);
  }
  // The tail moved back: a late deadline goes after c[3], an early one before c[1].
  l.insert(&c[4], t0 + milliseconds(100));
  l.insert(&c[0], t0);
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&c[0], &c[1], &c[3], &c[4]}));
  l.unlink(&c[0]);
  l.unlink(&c[1]);
  l.unlink(&c[3]);
  l.unlink(&c[4]);  // the last one: head and tail both go
  EXPECT_EQ(l.head(), nullptr);
  l.insert(&c[2], t0);
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&c[2]}));
}

TEST(deadline_list, unlink_of_an_untimed_call_is_a_no_op) {
  deadline_list l;
  test_call a, b;
  l.insert(&a, t0);
  l.unlink(&b);
  l.unlink(&a);
  l.unlink(&a);  // twice: still fine
  EXPECT_EQ(l.head(), nullptr);
}

TEST(deadline_list, pop_expired_earliest_first_up_to_now) {
  deadline_list l;
  test_call c[4];
  l.insert(&c[0], t0 + milliseconds(20));
  l.insert(&c[1], t0 + milliseconds(10));
  l.insert(&c[2], t0 + milliseconds(10));
  l.insert(&c[3], t0 + milliseconds(30));
  std::vector<call_base*> expired;
  // A deadline equal to now has expired.
  while (call_base* e = l.pop_expired(t0 + milliseconds(20))) {
    EXPECT_FALSE(slot_of(*e).timed);
    EXPECT_EQ(slot_of(*e).next, nullptr);
    expired.push_back(e);
  }
  EXPECT_EQ(expired, (std::vector<call_base*>{&c[1], &c[2], &c[0]}));
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&c[3]}));
  EXPECT_EQ(l.pop_expired(t0 + milliseconds(29)), nullptr);
}

TEST(deadline_list, clear_forgets_every_call) {
  deadline_list l;
  test_call a, b;
  l.insert(&a, t0);
  l.insert(&b, t0);
  l.clear();
  EXPECT_EQ(l.head(), nullptr);
  EXPECT_EQ(l.earliest(), deadline_list::time_point::max());
  // What the connection does with its victims.
  a.slot().prev = a.slot().next = b.slot().prev = b.slot().next = nullptr;
  a.slot().timed = false;
  l.insert(&a, t0 + milliseconds(1));
  EXPECT_EQ(walk(l), (std::vector<call_base*>{&a}));
}

}  // namespace
}  // namespace corvid_test
