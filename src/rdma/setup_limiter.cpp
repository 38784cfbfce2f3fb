#include "setup_limiter.hpp"

namespace corvid::rdma {

std::unique_ptr<setup_limiter::ticket> setup_limiter::enter() {
  std::lock_guard lock(mutex_);
  if (total_ >= max_total_) return nullptr;
  ++total_;
  return std::unique_ptr<ticket>(new ticket(shared_from_this()));
}

std::size_t setup_limiter::in_setup() const {
  std::lock_guard lock(mutex_);
  return total_;
}

bool setup_limiter::ticket::set_peer(std::string peer) {
  if (has_peer_) return true;
  std::lock_guard lock(owner_->mutex_);
  std::size_t& n = owner_->per_peer_[peer];
  if (n >= owner_->max_per_peer_) {
    if (n == 0) owner_->per_peer_.erase(peer);
    return false;
  }
  ++n;
  peer_ = std::move(peer);
  has_peer_ = true;
  return true;
}

setup_limiter::ticket::~ticket() {
  std::lock_guard lock(owner_->mutex_);
  --owner_->total_;
  if (!has_peer_) return;
  const auto it = owner_->per_peer_.find(peer_);
  if (it != owner_->per_peer_.end() && --it->second == 0) owner_->per_peer_.erase(it);
}

}  // namespace corvid::rdma
