#pragma once
// Bounds on RDMA connections in setup: accepted (queue pair created, chunks taken, answer
// sent) but not yet shown to work by a first completion. A peer that sends rdma_setup and
// never connects its queue pair would otherwise hold registered chunks for as long as it
// keeps the TCP connection open (a hostile review took the whole 1 GiB pool with 409
// connections). Each connection in setup holds a ticket; the limiter counts tickets in
// total and per peer address. Thread-safe: the server's reactors share it.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <asio/generic/stream_protocol.hpp>

namespace corvid::rdma {

class setup_limiter : public std::enable_shared_from_this<setup_limiter> {
 public:
  // Held by one connection in setup; gives its place back when destroyed.
  class ticket {
   public:
    ~ticket();
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;
    // Counts the connection against `peer` (its address, without the port). False when
    // that peer already has max_per_peer connections in setup: the caller drops it.
    bool set_peer(std::string peer);

   private:
    friend class setup_limiter;
    explicit ticket(std::shared_ptr<setup_limiter> owner) : owner_(std::move(owner)) {}
    std::shared_ptr<setup_limiter> owner_;
    std::string peer_;
    bool has_peer_ = false;
  };

  setup_limiter(std::size_t max_total, std::size_t max_per_peer)
      : max_total_(max_total), max_per_peer_(max_per_peer) {}

  // A ticket, or nullptr when max_total connections are in setup already.
  std::unique_ptr<ticket> enter();
  // What counts as one peer for max_per_peer: the address of `remote` without the port (one
  // host opens as many ports as it likes), an IPv6 address's /64, "local" for a Unix socket.
  static std::string peer_key(const asio::generic::stream_protocol::endpoint& remote);
  std::size_t in_setup() const;
  std::size_t max_total() const noexcept { return max_total_; }
  std::size_t max_per_peer() const noexcept { return max_per_peer_; }

 private:
  const std::size_t max_total_;
  const std::size_t max_per_peer_;
  mutable std::mutex mutex_;
  std::size_t total_ = 0;
  std::map<std::string, std::size_t> per_peer_;
};

}  // namespace corvid::rdma
