#include "metrics/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace corvid::metrics {
namespace {

constexpr double percentiles[] = {0, 0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};

// Nearest-rank order statistic, the definition histogram::percentile() approximates.
std::uint64_t exact_percentile(std::vector<std::uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

void expect_within_1_percent(const std::vector<std::uint64_t>& values) {
  histogram h;
  for (auto v : values) h.record(v);
  ASSERT_EQ(h.count(), values.size());
  for (double p : percentiles) {
    const auto want = static_cast<double>(exact_percentile(values, p));
    const auto got = static_cast<double>(h.percentile(p));
    EXPECT_LE(std::abs(got - want), 0.01 * want) << "p" << p << " want " << want << " got " << got;
  }
}

std::vector<std::uint64_t> draw(std::size_t n, auto&& dist) {
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) x = static_cast<std::uint64_t>(dist(rng));
  return v;
}

TEST(histogram, uniform) {
  expect_within_1_percent(draw(100000, std::uniform_int_distribution<std::uint64_t>(1000, 1e7)));
}

TEST(histogram, exponential) {
  expect_within_1_percent(draw(100000, std::exponential_distribution<double>(1.0 / 50000)));
}

TEST(histogram, bimodal) {
  std::normal_distribution<double> fast(20000, 2000), slow(5e6, 5e5);
  std::bernoulli_distribution is_slow(0.1);
  expect_within_1_percent(
      draw(100000, [&](auto& rng) { return std::max(0.0, is_slow(rng) ? slow(rng) : fast(rng)); }));
}

TEST(histogram, constant) {
  expect_within_1_percent(std::vector<std::uint64_t>(1000, 12345));
  histogram h;
  for (int i = 0; i < 10; ++i) h.record(987654321);
  // Clamping to [min, max] makes a constant distribution exact, not just within 1%.
  EXPECT_EQ(h.percentile(50), 987654321u);
}

TEST(histogram, small_values_are_exact) {
  std::vector<std::uint64_t> v(256);
  std::iota(v.begin(), v.end(), 0);
  histogram h;
  for (auto x : v) h.record(x);
  for (double p : percentiles) EXPECT_EQ(h.percentile(p), exact_percentile(v, p)) << p;
}

TEST(histogram, huge_values) {
  // An hour in ns and values near 2^64: nothing is clamped or wrapped.
  expect_within_1_percent(draw(
      10000, std::uniform_int_distribution<std::uint64_t>(3'000'000'000'000, 3'600'000'000'000)));
  expect_within_1_percent(
      draw(10000, std::uniform_int_distribution<std::uint64_t>(std::uint64_t{1} << 62, ~0ull)));
  histogram h;
  h.record(~0ull);
  EXPECT_EQ(h.max(), ~0ull);
  EXPECT_EQ(h.percentile(100), ~0ull);
}

TEST(histogram, every_bucket_within_half_percent) {
  // Sweep each power of two densely at both ends: the bucket midpoint is <= 1/256 off.
  for (unsigned k = 0; k < 64; ++k) {
    const std::uint64_t base = std::uint64_t{1} << k;
    for (std::uint64_t d = 0; d < 300; ++d) {
      for (std::uint64_t v : {base + d, (base << 1) - 1 - d}) {
        if (v < base || (k < 63 && v >= base << 1)) continue;
        const auto mid = histogram::midpoint_of(histogram::index_of(v));
        ASSERT_LT(histogram::index_of(v), histogram::bucket_count);
        ASSERT_LE(std::abs(static_cast<double>(mid) - static_cast<double>(v)),
                  static_cast<double>(v) / 256)
            << v;
      }
    }
  }
}

TEST(histogram, min_max_mean) {
  const auto v = draw(5000, std::uniform_int_distribution<std::uint64_t>(10, 1e9));
  histogram h;
  for (auto x : v) h.record(x);
  EXPECT_EQ(h.min(), *std::min_element(v.begin(), v.end()));
  EXPECT_EQ(h.max(), *std::max_element(v.begin(), v.end()));
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  EXPECT_NEAR(h.mean(), mean, mean * 1e-12);
  histogram huge;  // the sum of these wraps a uint64
  huge.record(std::uint64_t{1} << 63);
  huge.record(std::uint64_t{1} << 63);
  EXPECT_EQ(huge.mean(), 0x1p63);
}

TEST(histogram, merge_equals_recording_everything) {
  const auto a = draw(20000, std::exponential_distribution<double>(1.0 / 30000));
  // b holds both the smallest and the largest values, so merge() must take min and max from it
  // and add counts across the whole bucket range.
  auto b = draw(7000, std::uniform_int_distribution<std::uint64_t>(1000, 1e10));
  b.push_back(0);
  b.push_back(~0ull);
  histogram ha, hb, all;
  for (auto x : a) ha.record(x + 10), all.record(x + 10);
  for (auto x : b) hb.record(x), all.record(x);
  ha.merge(hb);
  EXPECT_EQ(ha.count(), all.count());
  EXPECT_EQ(ha.min(), all.min());
  EXPECT_EQ(ha.max(), all.max());
  EXPECT_NEAR(ha.mean(), all.mean(), all.mean() * 1e-12);
  for (double p : percentiles) EXPECT_EQ(ha.percentile(p), all.percentile(p)) << p;
  histogram empty;
  ha.merge(empty);  // merging nothing must not disturb min
  EXPECT_EQ(ha.min(), all.min());
  empty.merge(hb);  // merging into an empty histogram copies min and max
  EXPECT_EQ(empty.min(), 0u);
  EXPECT_EQ(empty.max(), ~0ull);
  EXPECT_EQ(empty.percentile(50), hb.percentile(50));
}

TEST(histogram, empty_and_reset) {
  histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.percentile(50), 0u);
  h.record(500);
  h.record(70000);
  EXPECT_EQ(h.count(), 2u);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.percentile(99), 0u);
  h.record(90000);
  h.record(100000);
  EXPECT_EQ(h.min(), 90000u);  // reset restored the min sentinel
  EXPECT_EQ(h.max(), 100000u);
  EXPECT_EQ(h.percentile(50), 90000u);
  EXPECT_EQ(h.percentile(100), 100000u);  // stale buckets from before reset() would give 90000
}

}  // namespace
}  // namespace corvid::metrics
