// load_balancer's side of hedged calls (lb_hedged_call.hpp): where another copy goes, and
// how long to wait before it.
#include <algorithm>

#include "corvid/client/load_balancer.hpp"

#include "latency_windows.hpp"
#include "lb_view.hpp"

namespace corvid {

std::optional<load_balancer::picked> load_balancer::pick_unused(std::string_view hash_key,
                                                                const std::vector<node*>& used,
                                                                steady::time_point now) {
  // Each pick avoids the last endpoint used; round robin and the load-aware policies move on
  // from the others too (their calls in flight count), so a few tries find a new one if any.
  for (std::size_t tries = 0; tries <= used.size() + 1; ++tries) {
    auto p = pick(hash_key, used.back(), now);
    if (!p) return std::nullopt;
    if (p->probe) {  // only an ejected endpoint is left: probe it for later calls, not this one
      start_probe(std::move(p->v), p->n);
      return std::nullopt;
    }
    if (std::find(used.begin(), used.end(), p->n) == used.end()) return std::move(*p);
    p->n->in_flight.fetch_sub(1, std::memory_order_relaxed);  // pick() counted it
  }
  return std::nullopt;
}

std::chrono::milliseconds load_balancer::hedge_delay(std::uint32_t method,
                                                     const hedging_policy& h) const {
  if (h.delay_quantile <= 0 || !latencies_) return h.delay;
  const auto q = latencies_->quantile(method, h.delay_quantile);
  if (!q) return h.delay;
  return std::max(h.delay, std::chrono::ceil<std::chrono::milliseconds>(*q));
}

void load_balancer::note_latency(std::uint32_t method, std::chrono::nanoseconds d) {
  if (latencies_) latencies_->add(method, d);
}

}  // namespace corvid
