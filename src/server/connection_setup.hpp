#pragma once
// A server connection's first moments: pre-authentication (a place and a budget until the
// first byte and, for TLS, the handshake), the first byte telling TLS, HTTP and corvid
// apart, and an RDMA setup switching the transport once its answer is written.
// docs/architecture.md, "Admission". Reactor thread only.
#include <memory>

#include "corvid/protocol/frame_header.hpp"

#include "../admission/shared_slots.hpp"
#include "../runtime/asio_all.hpp"

namespace corvid::rdma {
class rdma_stream;
}

namespace corvid::detail {

class server_connection;
struct server_tls;

class connection_setup {
 public:
  explicit connection_setup(server_connection& c) noexcept : c_(c) {}
  ~connection_setup();

  // TLS (rpc_server::init_tls): the first byte tells a TLS client from a plaintext one;
  // the handshake runs before the first read, off the hot path. With http_admin the same
  // peek tells an HTTP request ("GET ", "HEAD ") from a corvid client; `tls` may be null.
  void start(std::shared_ptr<const server_tls> tls);
  // A client's rdma_setup frame: builds the queue pair and queues the answer; the
  // connection switches to RDMA once the answer is written (switch_to_rdma).
  void on_rdma_setup(const protocol::frame_header& h, const char* payload);
  bool switching() const noexcept { return rdma_next_ != nullptr; }
  void switch_to_rdma();
  void closed();  // its pre-authentication place is free the moment the peer is gone
  // Charges the connection's peer_identity, read from its verified certificate, to its TLS
  // memory; false = no room (the identity is dropped; the caller closes the connection).
  bool charge_identity();

 private:
  // A place from the server's pool (a per-peer share) and its budget, until the first byte
  // or the TLS handshake; false = none.
  bool enter_pre_auth(bool tls);
  // Its place and memory are given back (with `as_tls`, the session stays charged as an
  // established one's; false = no room for it).
  bool end_pre_auth(bool as_tls);
  void wait_first_byte(std::shared_ptr<const server_tls> tls);
  void on_first_byte(const std::shared_ptr<const server_tls>& tls);
  void handshake(std::shared_ptr<const server_tls> tls);

  server_connection& c_;
  std::unique_ptr<shared_slots::ticket> pre_auth_;  // in pre-authentication: its place
  // Only while in pre-authentication (TLS, http_admin): kept out of the connection object,
  // which every idle plain connection carries.
  std::unique_ptr<asio::steady_timer> pre_auth_deadline_;
  bool pre_auth_expired_ = false;  // the pre-authentication deadline closed the socket
  // RDMA (init_ibv): the answered stream, which carries the bytes once the answer is written.
  std::shared_ptr<rdma::rdma_stream> rdma_next_;
};

}  // namespace corvid::detail
