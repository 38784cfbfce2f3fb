#include "rdma_error.hpp"

#include <string>

namespace corvid::rdma {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "corvid.rdma"; }
  std::string message(int ev) const override {
    switch (static_cast<rdma_errc>(ev)) {
      case rdma_errc::rnr_retry_exceeded:
        return "RDMA send failed: the peer had no receive buffer posted and the RNR retries "
               "ran out (ibv_config::rnr_retry)";
      case rdma_errc::retry_exceeded:
        return "RDMA send failed: the peer did not acknowledge it (transport retries exhausted: "
               "ibv_config::ack_timeout, retry_count)";
      case rdma_errc::transport_error:
        return "RDMA work request failed";
      case rdma_errc::flushed:
        return "RDMA queue pair in error state (the peer went away)";
      case rdma_errc::peer_closed:
        return "the peer closed the RDMA connection";
      case rdma_errc::protocol_error:
        return "unexpected bytes on the RDMA side channel";
      case rdma_errc::setup_timeout:
        return "RDMA setup: the peer's queue pair showed no sign of life within "
               "ibv_config::setup_timeout (never connected?)";
    }
    return "unknown RDMA error";
  }
};

}  // namespace

const std::error_category& rdma_category() noexcept {
  static const category c;
  return c;
}

}  // namespace corvid::rdma
