#pragma once
// Log-linear bucketing (the HdrHistogram layout), shared by the benchmark's histogram and the
// server's latency metrics.
//
// Each power-of-two range [2^k, 2^(k+1)) is split into 2^SubBits equal sub-buckets, so a
// bucket is at most 2^-SubBits of its lower bound wide; reporting the bucket midpoint keeps
// the relative error <= 2^-(SubBits+1). Values below 2^(SubBits+1) get width-1 buckets
// (exact). The whole uint64 range is covered, so nothing is ever clamped.
#include <bit>
#include <cstddef>
#include <cstdint>

namespace corvid::metrics {

template <unsigned SubBits>
struct log_linear {
  static constexpr unsigned sub_bucket_bits = SubBits;
  // Block 0 is [0, 2^SubBits); block b >= 1 is [2^SubBits, 2^(SubBits+1)) << (b - 1).
  static constexpr std::size_t bucket_count = (64 - sub_bucket_bits + 1) << sub_bucket_bits;
  static constexpr std::uint64_t exact_below = std::uint64_t{2} << sub_bucket_bits;

  // Hot path: one bit scan, one shift, one add. Values below exact_below map to themselves;
  // above that, shift right until the value has SubBits+1 significant bits.
  static constexpr std::size_t index_of(std::uint64_t v) noexcept {
    const unsigned shift =
        static_cast<unsigned>(std::bit_width(v | (exact_below - 1))) - (sub_bucket_bits + 1);
    return (std::size_t{shift} << sub_bucket_bits) + static_cast<std::size_t>(v >> shift);
  }

  // The smallest value of a bucket, and its width.
  static constexpr unsigned shift_of(std::size_t index) noexcept {
    const std::size_t block = index >> sub_bucket_bits;  // 0 and 1 both have shift 0
    return block == 0 ? 0 : static_cast<unsigned>(block - 1);
  }
  static constexpr std::uint64_t low_of(std::size_t index) noexcept {
    const unsigned shift = shift_of(index);
    return (index - (std::size_t{shift} << sub_bucket_bits)) << shift;
  }
  // The largest value of a bucket (inclusive).
  static constexpr std::uint64_t high_of(std::size_t index) noexcept {
    return low_of(index) + ((std::uint64_t{1} << shift_of(index)) - 1);
  }
  // Inverse of index_of(): the middle of the bucket's value range.
  static constexpr std::uint64_t midpoint_of(std::size_t index) noexcept {
    return low_of(index) + ((std::uint64_t{1} << shift_of(index)) - 1) / 2;
  }
};

static_assert(log_linear<7>::index_of(~std::uint64_t{0}) == log_linear<7>::bucket_count - 1);
static_assert(log_linear<7>::high_of(log_linear<7>::bucket_count - 1) == ~std::uint64_t{0});
static_assert(log_linear<6>::index_of(log_linear<6>::midpoint_of(1000)) == 1000);

}  // namespace corvid::metrics
