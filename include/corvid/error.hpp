#pragma once
// Error codes every call can end with. The numeric values are the wire `status` byte of a
// response frame (docs/protocol.md), so they never change meaning once assigned.
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "corvid/export.hpp"

namespace corvid {

enum class rpc_errc : std::uint8_t {
  ok = 0,
  timeout = 1,             // the call's deadline passed (client side)
  connection_closed = 2,   // the connection died or was never up
  function_not_found = 3,  // no handler registered under the function id
  bad_request = 4,         // arguments do not decode as the handler's parameters
  server_busy = 5,         // the server refused the call for lack of resources
  message_too_large = 6,   // a frame exceeds the configured maximum
  handler_error = 7,       // the handler threw; the message is the exception's what()
  cancelled = 8,           // the call was cancelled (client stop, explicit cancel)
  protocol_error = 9,      // the byte stream is not corvid protocol (magic, version, type)
  connect_failed = 10,     // resolving or connecting failed
  invalid_argument = 11,   // a local API misuse, e.g. an unparsable endpoint
  no_rdma_device = 12,     // init_ibv(): no usable RDMA device (or provider) on this host
  client_busy = 13,        // the client's own in-flight limit is reached (fail-fast mode)
  // The caller's parameter or result types differ from the handler's (their signature
  // fingerprints differ): the message names the function and both fingerprints.
  signature_mismatch = 14,
  // Refused by an interceptor or the authorization policy (server/interceptor.hpp) before
  // the handler ran: the caller proved no identity the server accepts (a missing or bad
  // credential) ...
  unauthenticated = 15,
  // ... or it did, and that identity may not call this method.
  permission_denied = 16,
  // A quota or limit on what the caller may ask for was reached (an interceptor's quota; the
  // request's call metadata exceeds server_config::max_metadata_entries or _bytes).
  resource_exhausted = 17,
  // A fault in the server's own call path, not the handler's: an interceptor threw.
  internal = 18,
};
// The highest code this build knows; a peer's status above it is its own (newer) code.
inline constexpr rpc_errc last_rpc_errc = rpc_errc::internal;

// Short stable name, e.g. "function_not_found".
CORVID_API std::string_view to_string(rpc_errc e) noexcept;
CORVID_API const std::error_category& rpc_category() noexcept;
inline std::error_code make_error_code(rpc_errc e) noexcept {
  return {static_cast<int>(e), rpc_category()};
}

// An error with its detail message, e.g. {handler_error, "division by zero"}.
// Converts to false when it holds no error, so `if (auto ec = co_await c.connect(..))` reads well.
class rpc_error {
 public:
  rpc_error() = default;
  rpc_error(rpc_errc code, std::string message = {}) : code_(code), message_(std::move(message)) {}

  rpc_errc code() const noexcept { return code_; }
  // The detail message, or the code's name when there is none.
  std::string message() const {
    return message_.empty() ? std::string(to_string(code_)) : message_;
  }
  std::error_code error_code() const noexcept { return make_error_code(code_); }
  // True when the request is known never to have left this process (its connection broke
  // before the bytes were handed to the socket): the server cannot have run it, so sending
  // it again is safe even when the function is not idempotent. client_pool retries such
  // calls once on another connection.
  bool request_unsent() const noexcept { return unsent_; }
  static rpc_error unsent(rpc_errc code, std::string message) {
    rpc_error e(code, std::move(message));
    e.unsent_ = true;
    return e;
  }
  explicit operator bool() const noexcept { return code_ != rpc_errc::ok; }
  friend bool operator==(const rpc_error& e, rpc_errc c) noexcept { return e.code_ == c; }

 private:
  rpc_errc code_ = rpc_errc::ok;
  bool unsent_ = false;
  std::string message_;
};

}  // namespace corvid

template <>
struct std::is_error_code_enum<corvid::rpc_errc> : std::true_type {};
