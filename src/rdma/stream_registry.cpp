#include "stream_registry.hpp"

#include <vector>

#include "rdma_stream.hpp"

namespace corvid::rdma {

asio::execution_context::id stream_registry::id;

void stream_registry::add(rdma_stream* s) {
  std::lock_guard lk(mutex_);
  streams_.insert(s);
}

void stream_registry::remove(rdma_stream* s) noexcept {
  std::lock_guard lk(mutex_);
  streams_.erase(s);
}

void stream_registry::shutdown() {
  // Take every handler out first and destroy them after: destroying one may destroy its
  // connection and with it a stream still in the set.
  std::vector<rdma_stream::abandoned> dropped;
  {
    std::lock_guard lk(mutex_);
    dropped.reserve(streams_.size());
    for (rdma_stream* s : streams_) dropped.push_back(s->abandon());
  }
  dropped.clear();
}

}  // namespace corvid::rdma
