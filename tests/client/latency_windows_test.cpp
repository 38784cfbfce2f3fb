// latency_windows: the quantile of a method's recent latencies, for hedging after one
// (hedging_policy::delay_quantile): none until enough calls, then within a bucket (a quarter
// of a power of two) of the truth, following the recent calls once older ones age out.
#include "client/latency_windows.hpp"

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using corvid::detail::latency_windows;

TEST(latency_windows, no_quantile_until_enough_calls_then_close_to_the_truth) {
  auto w = std::make_unique<latency_windows>();
  EXPECT_FALSE(w->quantile(7, 0.9));  // starts keeping method 7
  for (int i = 1; i <= 20; ++i) w->add(7, std::chrono::milliseconds(i));
  EXPECT_FALSE(w->quantile(7, 0.9)) << "too few calls";
  for (int i = 21; i <= 100; ++i) w->add(7, std::chrono::milliseconds(i));
  const auto q = w->quantile(7, 0.9);
  ASSERT_TRUE(q);
  EXPECT_GE(*q, 90ms);
  EXPECT_LE(*q, 90ms * 5 / 4 + 1ms);
}

TEST(latency_windows, only_methods_asked_for_are_kept) {
  auto w = std::make_unique<latency_windows>();
  for (int i = 0; i < 100; ++i) w->add(9, 1ms);
  EXPECT_FALSE(w->quantile(9, 0.5)) << "its calls before the first ask are not kept";
}

TEST(latency_windows, old_calls_age_out) {
  auto w = std::make_unique<latency_windows>();
  (void)w->quantile(3, 0.5);
  for (std::uint32_t i = 0; i < latency_windows::window; ++i) w->add(3, 100ms);
  for (std::uint32_t i = 0; i < 2 * latency_windows::window; ++i) w->add(3, 1ms);
  const auto q = w->quantile(3, 0.99);
  ASSERT_TRUE(q);
  EXPECT_LE(*q, 2ms);
}

}  // namespace
