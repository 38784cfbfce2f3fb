#include "call_recorder.hpp"

namespace corvid::metrics {

call_recorder::batch_entry* call_recorder::new_entry(method_stats* s, time_point arrived) noexcept {
  if (pending_count_ == pending_capacity) flush_batch({});
  last_ = &pending_[pending_count_++];
  *last_ = {s, arrived, 0, 0, 0};
  return last_;
}

void call_recorder::flush_batch(time_point now) noexcept {
  if (now == time_point{}) now = std::chrono::steady_clock::now();
  std::uint64_t calls = 0;
  for (std::size_t i = 0; i < pending_count_; ++i) {
    const batch_entry& e = pending_[i];
    e.stats->calls.add(e.calls);
    e.stats->request_bytes.add(e.request_bytes);
    e.stats->reply_bytes.add(e.reply_bytes);
    if (e.calls != 0) e.stats->latency.record(elapsed_ns(e.arrived, now), e.calls);
    calls += e.calls;
  }
  conn_.calls.add(calls);
  pending_count_ = 0;
  last_ = nullptr;
}

}  // namespace corvid::metrics
