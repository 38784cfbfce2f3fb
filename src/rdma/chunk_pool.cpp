#include "chunk_pool.hpp"

#include <algorithm>
#include <cassert>

namespace corvid::rdma {
namespace {

// Idle times from here on mean "never" (and would overflow the clock's arithmetic).
constexpr std::chrono::milliseconds forever = std::chrono::hours(24 * 365 * 100);

}  // namespace

chunk_pool::chunk_pool(std::unique_ptr<chunk_registrar> registrar, std::size_t chunk_size,
                       std::size_t watermark, std::chrono::milliseconds idle_release)
    : registrar_(std::move(registrar)),
      chunk_size_(chunk_size),
      watermark_(watermark),
      idle_release_(std::min(idle_release, forever)) {}

chunk_pool::~chunk_pool() {
  assert(stats_.in_use == 0);
  for (const auto& f : free_) registrar_->deregister_chunk(f.chunk);
}

bool chunk_pool::acquire(std::size_t n, std::vector<registered_chunk>& out, clock::time_point now) {
  std::lock_guard lk(mutex_);
  trim_locked(now);
  const std::size_t reuse = std::min(n, free_.size());
  const std::size_t fresh = n - reuse;
  if (stats_.registered_bytes + fresh * chunk_size_ > watermark_) {
    ++stats_.refusals;
    return false;
  }
  const std::size_t first = out.size();
  for (std::size_t i = 0; i < fresh; ++i) {
    registered_chunk c = registrar_->register_chunk(chunk_size_);
    if (!c) {  // out of memory or registration refused: undo, all or none
      for (std::size_t j = first; j < out.size(); ++j) registrar_->deregister_chunk(out[j]);
      stats_.registrations += out.size() - first;
      stats_.releases += out.size() - first;
      out.resize(first);
      ++stats_.refusals;
      return false;
    }
    out.push_back(c);
  }
  stats_.registrations += fresh;
  stats_.registered_bytes += fresh * chunk_size_;
  for (std::size_t i = 0; i < reuse; ++i) {  // most recently used first: still warm
    out.push_back(free_.back().chunk);
    free_.pop_back();
  }
  stats_.in_use += n;
  stats_.cached = free_.size();
  return true;
}

void chunk_pool::release(const registered_chunk& chunk, clock::time_point now) {
  std::lock_guard lk(mutex_);
  assert(stats_.in_use > 0);
  --stats_.in_use;
  free_.push_back({chunk, now});
  trim_locked(now);
}

void chunk_pool::trim(clock::time_point now) {
  std::lock_guard lk(mutex_);
  trim_locked(now);
}

std::optional<chunk_pool::clock::time_point> chunk_pool::schedule_trim() {
  std::lock_guard lk(mutex_);
  if (free_.empty() || idle_release_ >= forever) return std::nullopt;
  // The newest free chunk is the last to become idle; a trim due at or after that time
  // sees the older ones idle too.
  const clock::time_point idle_at = free_.back().since + idle_release_;
  if (trim_scheduled_ >= idle_at) return std::nullopt;
  trim_scheduled_ = idle_at + std::max(idle_release_ / 8, std::chrono::milliseconds(0));
  return trim_scheduled_;
}

void chunk_pool::trim_locked(clock::time_point now) {
  // free_ is ordered by release time, so the idle ones are a prefix.
  std::size_t idle = 0;
  while (idle < free_.size() && now - free_[idle].since >= idle_release_) ++idle;
  for (std::size_t i = 0; i < idle; ++i) registrar_->deregister_chunk(free_[i].chunk);
  free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(idle));
  stats_.releases += idle;
  stats_.registered_bytes -= idle * chunk_size_;
  stats_.cached = free_.size();
}

chunk_pool_stats chunk_pool::stats() const {
  std::lock_guard lk(mutex_);
  return stats_;
}

}  // namespace corvid::rdma
