#pragma once
// The server's per-method latency histogram: the benchmark's log-linear bucketing
// (log_linear.hpp) with 64 sub-buckets per power of two (bucket midpoints within 0.8% of
// every value in them), nanoseconds up to 2^40 (18 minutes; longer calls land in the top
// bucket, their sum stays exact). One writer (a reactor), read by scrapes: see counter.hpp.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "counter.hpp"
#include "log_linear.hpp"

namespace corvid::metrics {

class latency_histogram {
 public:
  using layout = log_linear<6>;
  static constexpr std::uint64_t max_exact_ns = std::uint64_t{1} << 40;
  static constexpr std::size_t bucket_count = layout::index_of(max_exact_ns);

  latency_histogram() : buckets_(std::make_unique<counter[]>(bucket_count)) {}

  // `n` calls that each took `ns` (a batch's calls share their arrival and reply times).
  void record(std::uint64_t ns, std::uint64_t n = 1) noexcept {
    buckets_[std::min(layout::index_of(ns), bucket_count - 1)].add(n);
    sum_ns_.add(ns * n);
    count_.add(n);
  }

  std::uint64_t count() const noexcept { return count_.get(); }
  std::uint64_t sum_ns() const noexcept { return sum_ns_.get(); }
  std::uint64_t bucket(std::size_t i) const noexcept { return buckets_[i].get(); }
  // The largest value bucket i holds (the top bucket holds everything above).
  static std::uint64_t bucket_high(std::size_t i) noexcept { return layout::high_of(i); }

 private:
  std::unique_ptr<counter[]> buckets_;
  counter sum_ns_;
  counter count_;
};

}  // namespace corvid::metrics
