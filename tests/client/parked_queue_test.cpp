// The client's queue of parked requests: first in, first out, removal from anywhere keeps the
// order (and the tail) right, each call's slot's `parked` points at its request exactly while
// queued, and the queue frees what it still holds when destroyed.
#include "client/parked_queue.hpp"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "test_call.hpp"

namespace corvid_test {
namespace {

using corvid::detail::call_base;
using corvid::detail::parked_queue;
using corvid::detail::parked_request;

void park(parked_queue& q, call_base& call) {
  auto p = std::make_unique<parked_request>();
  p->call = &call;
  q.push_back(std::move(p));
}

std::vector<call_base*> drain(parked_queue& q) {
  std::vector<call_base*> out;
  while (auto p = q.pop_front()) {
    EXPECT_EQ(corvid::detail::slot_of(*p->call).parked, nullptr);
    out.push_back(p->call);
  }
  EXPECT_TRUE(q.empty());
  return out;
}

TEST(parked_queue, first_in_first_out) {
  parked_queue q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.pop_front(), nullptr);
  test_call c[3];
  for (auto& x : c) park(q, x);
  EXPECT_EQ(q.front()->call, &c[0]);
  for (auto& x : c) {
    ASSERT_NE(x.slot().parked, nullptr);
    EXPECT_EQ(x.slot().parked->call, &x);
  }
  EXPECT_EQ(drain(q), (std::vector<call_base*>{&c[0], &c[1], &c[2]}));
  park(q, c[1]);  // usable again once emptied
  EXPECT_EQ(drain(q), (std::vector<call_base*>{&c[1]}));
}

TEST(parked_queue, remove_from_the_middle) {
  parked_queue q;
  test_call c[4];
  for (auto& x : c) park(q, x);
  auto p = q.remove(&c[1]);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->call, &c[1]);
  EXPECT_EQ(c[1].slot().parked, nullptr);
  EXPECT_EQ(drain(q), (std::vector<call_base*>{&c[0], &c[2], &c[3]}));
}

TEST(parked_queue, remove_head_and_tail) {
  parked_queue q;
  test_call c[4];
  for (int i = 0; i < 3; ++i) park(q, c[i]);
  EXPECT_NE(q.remove(&c[0]), nullptr);
  EXPECT_EQ(q.front()->call, &c[1]);
  EXPECT_NE(q.remove(&c[2]), nullptr);
  park(q, c[3]);  // the tail moved back to c[1]: c[3] goes after it
  EXPECT_EQ(drain(q), (std::vector<call_base*>{&c[1], &c[3]}));
  park(q, c[0]);
  EXPECT_NE(q.remove(&c[0]), nullptr);  // the only one: head and tail both go
  EXPECT_TRUE(q.empty());
  park(q, c[2]);
  EXPECT_EQ(drain(q), (std::vector<call_base*>{&c[2]}));
}

TEST(parked_queue, remove_of_an_unparked_call_finds_nothing) {
  parked_queue q;
  test_call a, b;
  park(q, a);
  EXPECT_EQ(q.remove(&b), nullptr);
  EXPECT_EQ(drain(q), (std::vector<call_base*>{&a}));
  EXPECT_EQ(q.remove(&a), nullptr);
}

TEST(parked_queue, destruction_frees_what_is_left) {
  test_call c[3];
  {
    parked_queue q;
    for (auto& x : c) park(q, x);
  }  // LeakSanitizer (the asan preset) would report the requests
  for (auto& x : c) EXPECT_EQ(x.slot().parked, nullptr);
}

}  // namespace
}  // namespace corvid_test
