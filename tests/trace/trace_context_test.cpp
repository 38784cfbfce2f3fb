// trace_context: the W3C traceparent text form, new ids, and the per-thread current context.
#include <thread>

#include <gtest/gtest.h>

#include "corvid/trace/trace_scope.hpp"

namespace corvid {
namespace {

constexpr std::string_view w3c_example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContext, ParsesTheW3cExampleAndWritesItBack) {
  auto t = trace_context::parse(w3c_example);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->trace_id[0], 0x4b);
  EXPECT_EQ(t->trace_id[15], 0x36);
  EXPECT_EQ(t->span_id[0], 0x00);
  EXPECT_EQ(t->span_id[7], 0xb7);
  EXPECT_TRUE(t->sampled());
  EXPECT_EQ(t->traceparent(), w3c_example);
}

TEST(TraceContext, RefusesWhatW3cCallsInvalid) {
  const std::string_view bad[] = {
      "",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",          // no flags
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",       // upper case
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",       // zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",       // zero span id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       // version ff
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",     // 00 has no more fields
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       // wrong separator
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",       // not hex
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01extra",  // no '-' before more
  };
  for (auto s : bad) EXPECT_FALSE(trace_context::parse(s)) << s;
}

TEST(TraceContext, ReadsTheKnownFieldsOfALaterVersion) {
  auto t = trace_context::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more");
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->sampled());
  EXPECT_EQ(t->traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
}

TEST(TraceContext, NewTracesAndChildSpansGetFreshIds) {
  const trace_context a = trace_context::new_trace();
  const trace_context b = trace_context::new_trace(false);
  EXPECT_TRUE(a.valid());
  EXPECT_TRUE(a.sampled());
  EXPECT_FALSE(b.sampled());
  EXPECT_NE(a.trace_id, b.trace_id);
  const trace_context c = a.child();
  EXPECT_EQ(c.trace_id, a.trace_id);
  EXPECT_EQ(c.flags, a.flags);
  EXPECT_NE(c.span_id, a.span_id);
  EXPECT_TRUE(trace_context::parse(c.traceparent()) == c);
  EXPECT_FALSE(trace_context{}.valid());
}

TEST(TraceScope, NestsAndRestoresPerThread) {
  EXPECT_EQ(current_trace(), nullptr);
  const trace_context outer = trace_context::new_trace();
  const trace_context inner = outer.child();
  {
    trace_scope a(outer);
    EXPECT_EQ(current_trace(), &outer);
    {
      trace_scope b(inner);
      EXPECT_EQ(current_trace(), &inner);
      trace_scope none(nullptr);  // changes nothing
      EXPECT_EQ(current_trace(), &inner);
      std::thread([] { EXPECT_EQ(current_trace(), nullptr); }).join();
    }
    EXPECT_EQ(current_trace(), &outer);
  }
  EXPECT_EQ(current_trace(), nullptr);
}

}  // namespace
}  // namespace corvid
