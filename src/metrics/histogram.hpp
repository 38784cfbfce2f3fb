#pragma once
// A log-linear histogram with percentiles (<= 0.4% error): corvid-bench's latency histogram.
//
// 128 sub-buckets per power of two (log_linear<7>, 7424 buckets, 58 KiB), so the bucket
// midpoint is within 1/256 of any value in it, well inside the benchmark's 1% budget.
//
// Not thread-safe by design: each client thread records into its own histogram and the driver
// merge()s them afterwards, so record() needs no atomics. (The server's metrics use the same
// bucketing with single-writer counters: metrics/latency_histogram.hpp.)
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "log_linear.hpp"

namespace corvid::metrics {

class histogram {
 public:
  using layout = log_linear<7>;
  static constexpr unsigned sub_bucket_bits = layout::sub_bucket_bits;
  static constexpr std::size_t bucket_count = layout::bucket_count;

  // The only allocation: done once here, never in record().
  histogram() : counts_(bucket_count, 0) {}

  void record(std::uint64_t ns) noexcept {
    ++counts_[index_of(ns)];
    ++count_;
    sum_ += static_cast<double>(ns);
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
  }

  void merge(const histogram& other) noexcept {
    for (std::size_t i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
    count_ += other.count_;
    sum_ += other.sum_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }

  void reset() noexcept {
    std::fill(counts_.begin(), counts_.end(), 0);
    count_ = 0;
    sum_ = 0;
    min_ = std::numeric_limits<std::uint64_t>::max();
    max_ = 0;
  }

  std::uint64_t count() const noexcept { return count_; }
  // Empty histogram: min(), max(), mean() and percentile() all return 0.
  std::uint64_t min() const noexcept { return count_ == 0 ? 0 : min_; }
  std::uint64_t max() const noexcept { return max_; }
  double mean() const noexcept { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }

  // Nearest-rank percentile: the value of rank ceil(p/100 * count) (rank 1 for p == 0),
  // approximated by its bucket's midpoint, clamped to [min, max] so p=0/p=100 are exact.
  std::uint64_t percentile(double p) const noexcept {
    if (count_ == 0) return 0;
    p = std::clamp(p, 0.0, 100.0);
    auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::clamp(midpoint_of(i), min(), max_);
    }
    return max_;  // unreachable: the counts sum to count_
  }

  static constexpr std::size_t index_of(std::uint64_t v) noexcept { return layout::index_of(v); }
  static constexpr std::uint64_t midpoint_of(std::size_t i) noexcept {
    return layout::midpoint_of(i);
  }

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  double sum_ = 0;  // double, not uint64: huge samples must not wrap the mean
  std::uint64_t min_ = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t max_ = 0;
};

}  // namespace corvid::metrics
