#pragma once
// An RDMA stream counts into its connection's transport counters (transport_stats::rdma_*).
#include "../runtime/stats_counters.hpp"

namespace corvid::rdma {
using rdma_counters = detail::stats_counters;
}  // namespace corvid::rdma
