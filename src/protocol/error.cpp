#include "corvid/error.hpp"

namespace corvid {

std::string_view to_string(rpc_errc e) noexcept {
  switch (e) {
    case rpc_errc::ok:
      return "ok";
    case rpc_errc::timeout:
      return "timeout";
    case rpc_errc::connection_closed:
      return "connection_closed";
    case rpc_errc::function_not_found:
      return "function_not_found";
    case rpc_errc::bad_request:
      return "bad_request";
    case rpc_errc::server_busy:
      return "server_busy";
    case rpc_errc::message_too_large:
      return "message_too_large";
    case rpc_errc::handler_error:
      return "handler_error";
    case rpc_errc::cancelled:
      return "cancelled";
    case rpc_errc::protocol_error:
      return "protocol_error";
    case rpc_errc::connect_failed:
      return "connect_failed";
    case rpc_errc::invalid_argument:
      return "invalid_argument";
    case rpc_errc::no_rdma_device:
      return "no_rdma_device";
    case rpc_errc::client_busy:
      return "client_busy";
    case rpc_errc::signature_mismatch:
      return "signature_mismatch";
    case rpc_errc::unauthenticated:
      return "unauthenticated";
    case rpc_errc::permission_denied:
      return "permission_denied";
    case rpc_errc::resource_exhausted:
      return "resource_exhausted";
    case rpc_errc::internal:
      return "internal";
  }
  return "unknown_error";
}

namespace {
class rpc_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "corvid"; }
  std::string message(int ev) const override {
    return std::string(to_string(static_cast<rpc_errc>(ev)));
  }
};
}  // namespace

const std::error_category& rpc_category() noexcept {
  static const rpc_category_impl category;
  return category;
}

}  // namespace corvid
