#pragma once
// A small pool of places shared by every peer of a server — connections in TLS handshake,
// admin HTTP sessions, RDMA connections in setup — with a bounded share per peer address.
// A crowd of cheap connections from one host cannot take every place (per peer), and no
// number of hosts can take more than the pool (total). Each holder keeps a ticket and gives
// its place back the moment it is destroyed (the connection closed: reset, FIN, done), not
// when a timer fires. Thread-safe: a server's reactors share one pool.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "../runtime/asio_all.hpp"

namespace corvid::detail {

class shared_slots : public std::enable_shared_from_this<shared_slots> {
 public:
  // Held by one holder; gives its place back when destroyed.
  class ticket {
   public:
    ~ticket();
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;
    // Counts the holder against `peer` (peer_key()). False when that peer already holds
    // max_per_peer places: the caller drops the holder (and this ticket).
    bool set_peer(std::string peer);

   private:
    friend class shared_slots;
    explicit ticket(std::shared_ptr<shared_slots> owner) : owner_(std::move(owner)) {}
    std::shared_ptr<shared_slots> owner_;
    std::string peer_;
    bool has_peer_ = false;
  };

  // Use make(): tickets keep their pool alive.
  shared_slots(std::size_t max_total, std::size_t max_per_peer)
      : max_total_(max_total), max_per_peer_(max_per_peer) {}
  static std::shared_ptr<shared_slots> make(std::size_t max_total, std::size_t max_per_peer) {
    return std::make_shared<shared_slots>(max_total, max_per_peer);
  }

  // A ticket, or nullptr when max_total places are taken already.
  std::unique_ptr<ticket> enter();
  // enter() and set_peer(peer) in one: nullptr when either refuses.
  std::unique_ptr<ticket> take(std::string peer);
  std::size_t in_use() const;
  std::size_t held_by(const std::string& peer) const;
  std::size_t max_total() const noexcept { return max_total_; }
  std::size_t max_per_peer() const noexcept { return max_per_peer_; }

 private:
  const std::size_t max_total_;
  const std::size_t max_per_peer_;
  mutable std::mutex mutex_;
  std::size_t total_ = 0;
  std::map<std::string, std::size_t, std::less<>> per_peer_;
};

// What counts as one peer for a per-peer share: the address of `remote` without the port
// (one host opens as many ports as it likes), an IPv6 address's /64, "local" for a Unix
// socket.
std::string peer_key(const asio::generic::stream_protocol::endpoint& remote);
// The same for a connected socket ("unknown" when it has no peer any more).
std::string peer_key(const asio::generic::stream_protocol::socket& socket);

}  // namespace corvid::detail
