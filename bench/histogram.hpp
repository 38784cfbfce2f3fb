// Log-linear latency histogram (HdrHistogram layout) for corvid-bench.
//
// Each power-of-two range [2^k, 2^(k+1)) is split into 128 equal sub-buckets, so a bucket is at
// most 1/128 of its lower bound wide; reporting the bucket midpoint keeps the relative error
// <= 1/256 (0.4%), well inside the 1% budget. Values below 256 get width-1 buckets (exact).
// The whole uint64 range is covered (7424 buckets, 58 KiB), so nothing is ever clamped.
//
// Not thread-safe by design: each client thread records into its own histogram and the driver
// merge()s them afterwards, so record() needs no atomics.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace corvid::bench {

class histogram {
 public:
  static constexpr unsigned sub_bucket_bits = 7;  // 128 sub-buckets per power of two
  // Block 0 is [0, 128); block b >= 1 is [128, 256) << (b - 1); 2^64 - 1 lands in block 57.
  static constexpr std::size_t bucket_count = (64 - sub_bucket_bits + 1) << sub_bucket_bits;

  // The only allocation: done once here, never in record().
  histogram() : counts_(bucket_count, 0) {}

  // Hot path: one bit scan, one shift, one add into the bucket.
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

  // Bucket index: values < 256 map to themselves; above that, shift right until the value
  // has 8 significant bits ([128, 256)) and offset by 128 per shift.
  static constexpr std::size_t index_of(std::uint64_t v) noexcept {
    const unsigned shift = static_cast<unsigned>(std::bit_width(v | 0xff)) - (sub_bucket_bits + 1);
    return (std::size_t{shift} << sub_bucket_bits) + static_cast<std::size_t>(v >> shift);
  }

  // Inverse of index_of(): the middle of the bucket's value range.
  static constexpr std::uint64_t midpoint_of(std::size_t index) noexcept {
    const std::size_t block = index >> sub_bucket_bits;  // 0 and 1 both have shift 0
    const unsigned shift = block == 0 ? 0 : static_cast<unsigned>(block - 1);
    const std::uint64_t low = (index - (std::size_t{shift} << sub_bucket_bits)) << shift;
    return low + ((std::uint64_t{1} << shift) - 1) / 2;
  }

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  double sum_ = 0;  // double, not uint64: huge samples must not wrap the mean
  std::uint64_t min_ = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t max_ = 0;
};

static_assert(histogram::index_of(~std::uint64_t{0}) == histogram::bucket_count - 1);
static_assert(histogram::index_of(histogram::midpoint_of(histogram::bucket_count - 1)) ==
              histogram::bucket_count - 1);

}  // namespace corvid::bench
