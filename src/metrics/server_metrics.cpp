#include "server_metrics.hpp"

namespace corvid::metrics {

reactor_shard::reactor_shard(std::size_t methods)
    : size_(methods + 1), slots_(std::make_unique<std::atomic<method_stats*>[]>(size_)) {}

reactor_shard::~reactor_shard() {
  for (std::size_t i = 0; i < size_; ++i) delete slots_[i].load(std::memory_order_relaxed);
}

method_stats* reactor_shard::create(std::size_t method) {
  auto* s = new method_stats();
  slots_[method].store(s, std::memory_order_release);  // a scrape sees it fully built
  return s;
}

server_metrics::server_metrics(std::vector<std::string> method_names, std::size_t reactors)
    : names_(std::move(method_names)) {
  for (std::size_t r = 0; r < reactors; ++r) {
    shards_.push_back(std::make_unique<reactor_shard>(names_.size()));
  }
}

}  // namespace corvid::metrics
