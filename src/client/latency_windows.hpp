#pragma once
// Recent latencies of a few methods, for hedging after a quantile of them
// (hedging_policy::delay_quantile). Lock-free: a fixed table of methods, each with two
// windows of log-linear buckets; when the current window has seen `window` calls it becomes
// the previous one and a cleared one takes its place, so the quantile follows the last
// `window` to 2 * `window` calls. Approximate by design: a call counted while a window is
// being cleared may be lost.
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <optional>

namespace corvid::detail {

class latency_windows {
 public:
  static constexpr std::size_t max_methods = 32;  // more hedged methods use their fixed delay
  static constexpr std::uint32_t window = 512;
  static constexpr std::uint32_t min_samples = 32;  // fewer: no quantile yet

  // The q-quantile of `method`'s recent latencies (the upper edge of its bucket), or none
  // while it has too few. The first ask starts keeping the method's latencies.
  std::optional<std::chrono::microseconds> quantile(std::uint32_t method, double q) {
    slot* s = find(method, true);
    if (s == nullptr) return std::nullopt;
    std::array<std::uint64_t, buckets> sum{};
    std::uint64_t total = 0;
    for (auto& w : s->windows) {
      for (std::size_t b = 0; b < buckets; ++b) {
        const auto n = w.counts[b].load(std::memory_order_relaxed);
        sum[b] += n;
        total += n;
      }
    }
    if (total < min_samples) return std::nullopt;
    const auto want = static_cast<std::uint64_t>(q * static_cast<double>(total));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < buckets; ++b) {
      seen += sum[b];
      if (seen > want) return upper_edge(b);
    }
    return upper_edge(buckets - 1);
  }
  // A call of `method` took `d` (ignored unless its quantile was asked for).
  void add(std::uint32_t method, std::chrono::nanoseconds d) noexcept {
    slot* s = find(method, false);
    if (s == nullptr) return;
    const auto us = static_cast<std::uint64_t>(std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::microseconds>(d).count()));
    const unsigned cur = s->current.load(std::memory_order_relaxed) & 1;
    auto& w = s->windows[cur];
    w.counts[bucket_of(us)].fetch_add(1, std::memory_order_relaxed);
    if (w.seen.fetch_add(1, std::memory_order_relaxed) + 1 == window) {
      auto& next = s->windows[cur ^ 1];
      for (auto& c : next.counts) c.store(0, std::memory_order_relaxed);
      next.seen.store(0, std::memory_order_relaxed);
      s->current.store(cur ^ 1, std::memory_order_relaxed);
    }
  }

 private:
  // 4 buckets per power of two of microseconds, up to 2^40 us.
  static constexpr std::size_t buckets = 41 * 4;
  static std::size_t bucket_of(std::uint64_t us) noexcept {
    const unsigned width = static_cast<unsigned>(std::bit_width(us));  // us in [2^(w-1), 2^w)
    if (width >= 41) return buckets - 1;
    const unsigned quarter = width >= 3 ? static_cast<unsigned>((us >> (width - 3)) & 3) : 0;
    return width * 4 + quarter;
  }
  static std::chrono::microseconds upper_edge(std::size_t b) noexcept {
    const std::size_t width = b / 4, quarter = b % 4;
    if (width < 3) return std::chrono::microseconds(std::uint64_t{1} << width);
    const std::uint64_t base = std::uint64_t{1} << (width - 1);
    return std::chrono::microseconds(base + (base / 4) * (quarter + 1));
  }
  struct window_counts {
    std::array<std::atomic<std::uint32_t>, buckets> counts{};
    std::atomic<std::uint32_t> seen{0};
  };
  struct slot {
    std::atomic<std::uint32_t> method{0};  // 0: free (a function id of 0 is not kept)
    std::atomic<unsigned> current{0};
    std::array<window_counts, 2> windows{};
  };
  slot* find(std::uint32_t method, bool claim) noexcept {
    if (method == 0) return nullptr;
    for (auto& s : slots_) {
      std::uint32_t m = s.method.load(std::memory_order_acquire);
      if (m == method) return &s;
      if (m == 0) {
        if (!claim) return nullptr;
        if (s.method.compare_exchange_strong(m, method, std::memory_order_acq_rel) || m == method) {
          return &s;
        }
      }
    }
    return nullptr;
  }
  std::array<slot, max_methods> slots_{};
};

}  // namespace corvid::detail
