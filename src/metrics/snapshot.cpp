#include "snapshot.hpp"

#include <cmath>

namespace corvid::metrics {

std::uint64_t method_totals::errors_total() const noexcept {
  std::uint64_t n = 0;
  for (std::size_t c = 1; c < errc_count; ++c) n += errors[c];
  return n;
}

std::uint64_t method_totals::latency_percentile(double p) const noexcept {
  if (latency_count == 0) return 0;
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(latency_count)));
  if (rank == 0) rank = 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    seen += buckets[i];
    if (seen >= rank) return latency_histogram::layout::midpoint_of(i);
  }
  return latency_histogram::layout::midpoint_of(buckets.size() - 1);
}

std::vector<method_totals> collect_methods(const server_metrics& m) {
  std::vector<method_totals> out(m.method_count() + 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    method_totals& t = out[i];
    t.name = i < m.method_count() ? m.method_name(i) : std::string("(none)");
    t.buckets.assign(latency_histogram::bucket_count, 0);
    for (const auto& shard : m.shards()) {
      const method_stats* s = shard->peek(i);
      if (s == nullptr) continue;
      t.latency_count += s->latency.count();  // before calls: in flight never below 0
      t.calls += s->calls.get();
      t.request_bytes += s->request_bytes.get();
      t.reply_bytes += s->reply_bytes.get();
      for (std::size_t c = 0; c < errc_count; ++c) t.errors[c] += s->errors[c].get();
      for (std::size_t b = 0; b < latency_histogram::bucket_count; ++b) {
        t.buckets[b] += s->latency.bucket(b);
      }
      t.latency_sum_ns += s->latency.sum_ns();
    }
  }
  return out;
}

}  // namespace corvid::metrics
