#pragma once
// Why an RDMA connection failed, as std::error_code: the connections turn these into the
// connection_closed message every pending call ends with.
#include <system_error>

namespace corvid::rdma {

enum class rdma_errc {
  rnr_retry_exceeded = 1,  // the peer kept no receive posted and the RNR retries ran out
  retry_exceeded,          // the peer did not acknowledge a send within the retries
  transport_error,         // a work request failed (local error, remote error, ...)
  flushed,                 // the queue pair went to the error state; its work was flushed
  peer_closed,             // the side-channel TCP connection closed
  protocol_error,          // bytes on the side channel after the handshake
  setup_timeout,           // no completion within ibv_config::setup_timeout of accepting it
};

const std::error_category& rdma_category() noexcept;
inline std::error_code make_error_code(rdma_errc e) noexcept {
  return {static_cast<int>(e), rdma_category()};
}

}  // namespace corvid::rdma

template <>
struct std::is_error_code_enum<corvid::rdma::rdma_errc> : std::true_type {};
