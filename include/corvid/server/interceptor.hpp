#pragma once
// Server interceptors: checks that run on every call after its method is known and before
// its arguments are decoded or its handler runs, and may refuse it (an access rule, a
// quota, an audit log). Added with rpc_server::add_interceptor before start(); they run in
// the order added, on unary calls and at a stream's open, on every transport. A refused
// call never runs its handler; its caller gets the verdict's code and message. An
// interceptor that throws ends that call with rpc_errc::internal, never the connection.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "corvid/call_metadata.hpp"
#include "corvid/error.hpp"
#include "corvid/server/peer_identity.hpp"
#include "corvid/task.hpp"

namespace corvid {

// What an interceptor knows of a call before it runs. Valid during on_call (an async
// interceptor's: until its task finishes).
struct call_info {
  std::string_view method;  // the registered name: "echo", "inventory::get"
  std::uint32_t function_id = 0;
  bool stream = false;                      // a stream's open
  const peer_identity* identity = nullptr;  // set: who the connection's peer proved to be
  metadata_view metadata;                   // the request's call metadata
  std::optional<std::chrono::steady_clock::time_point> deadline;  // the caller's
  std::string_view peer;  // "ip:port", or "unix:" and the socket's path
  std::uint64_t request_id = 0;
};

// What an interceptor decides: the call goes on, or it is refused with a code (usually
// unauthenticated, permission_denied or resource_exhausted) and a message for its caller.
class call_verdict {
 public:
  // The call goes on to the next interceptor, then its handler.
  static call_verdict proceed() noexcept { return {}; }
  // Refused: the message is copied (a refusal that must not allocate passes a literal to
  // refuse_static).
  static call_verdict refuse(rpc_errc code, std::string message) {
    call_verdict v;
    v.code_ = code == rpc_errc::ok ? rpc_errc::permission_denied : code;
    v.owned_ = std::move(message);
    v.view_ = {};
    v.has_owned_ = true;
    return v;
  }
  // Refused with a message that outlives the call (a string literal): nothing is allocated.
  static call_verdict refuse_static(rpc_errc code, std::string_view message) noexcept {
    call_verdict v;
    v.code_ = code == rpc_errc::ok ? rpc_errc::permission_denied : code;
    v.view_ = message;
    return v;
  }
  bool proceeds() const noexcept { return code_ == rpc_errc::ok; }
  rpc_errc code() const noexcept { return code_; }
  std::string_view message() const noexcept {
    return has_owned_ ? std::string_view(owned_) : view_;
  }

 private:
  rpc_errc code_ = rpc_errc::ok;
  bool has_owned_ = false;
  std::string_view view_;
  std::string owned_;
};

// How a call an interceptor let through ended (for interceptors that observe ends).
struct call_end {
  std::string_view method;
  std::uint32_t function_id = 0;
  const peer_identity* identity = nullptr;
  rpc_errc status = rpc_errc::ok;       // cancelled: the caller gave up or the connection closed
  std::chrono::nanoseconds duration{};  // from the request's arrival to its reply
};

// A check that answers at once, on the connection's reactor thread: it must not block.
class server_interceptor {
 public:
  virtual ~server_interceptor() = default;
  virtual call_verdict on_call(const call_info& call) = 0;
  // Called once for each call that passed every interceptor, when it ends, if
  // observes_end() is true (the server keeps no bookkeeping for it otherwise).
  virtual void on_end(const call_end& end) noexcept { (void)end; }
  virtual bool observes_end() const noexcept { return false; }
};

// A check that may wait (a token looked up in a cache that sometimes asks another service).
// While it waits the call holds a copy of its request, charged to its connection's memory
// like a running coroutine call, and counts among the connection's running calls. A call
// cancelled meanwhile (or whose connection closed) never runs; one whose deadline passed is
// answered timeout.
class async_server_interceptor {
 public:
  virtual ~async_server_interceptor() = default;
  virtual task<call_verdict> on_call(const call_info& call) = 0;
};

}  // namespace corvid
