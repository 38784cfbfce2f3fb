#include "shared_slots.hpp"

#include <algorithm>
#include <cstring>

#include "../runtime/asio_all.hpp"
#include <netinet/in.h>

namespace corvid::detail {

std::unique_ptr<shared_slots::ticket> shared_slots::enter() {
  std::lock_guard lock(mutex_);
  if (total_ >= max_total_) return nullptr;
  ++total_;
  return std::unique_ptr<ticket>(new ticket(shared_from_this()));
}

std::string peer_key(const asio::generic::stream_protocol::endpoint& remote) {
  if (remote.protocol().family() == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(remote.data());
    return asio::ip::address_v4(ntohl(in->sin_addr.s_addr)).to_string();
  }
  if (remote.protocol().family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(remote.data());
    asio::ip::address_v6::bytes_type b;
    std::memcpy(b.data(), in6->sin6_addr.s6_addr, b.size());
    const asio::ip::address_v6 a(b);
    // An IPv6 host commonly owns a whole /64: count per prefix, or it could take every place
    // in setup from addresses of its own. (IPv4 clients of a dual-stack server arrive
    // v4-mapped and are counted per address.)
    if (!a.is_v4_mapped()) std::fill(b.begin() + 8, b.end(), 0);
    return asio::ip::address_v6(b).to_string();
  }
  return "local";  // a Unix-domain socket: every caller is this host
}

std::string peer_key(const asio::generic::stream_protocol::socket& socket) {
  std::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  return ec ? std::string("unknown") : peer_key(remote);
}

std::unique_ptr<shared_slots::ticket> shared_slots::take(std::string peer) {
  auto t = enter();
  if (t && !t->set_peer(std::move(peer))) t.reset();
  return t;
}

std::size_t shared_slots::in_use() const {
  std::lock_guard lock(mutex_);
  return total_;
}

std::size_t shared_slots::held_by(const std::string& peer) const {
  std::lock_guard lock(mutex_);
  const auto it = per_peer_.find(peer);
  return it == per_peer_.end() ? 0 : it->second;
}

bool shared_slots::ticket::set_peer(std::string peer) {
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

shared_slots::ticket::~ticket() {
  std::lock_guard lock(owner_->mutex_);
  --owner_->total_;
  if (!has_peer_) return;
  const auto it = owner_->per_peer_.find(peer_);
  if (it != owner_->per_peer_.end() && --it->second == 0) owner_->per_peer_.erase(it);
}

}  // namespace corvid::detail
