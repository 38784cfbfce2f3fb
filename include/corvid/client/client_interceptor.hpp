#pragma once
// Client interceptors (client_config::interceptors): code that runs for every call a client,
// pool or balancer starts, before its request is encoded, to add metadata (a bearer token, a
// tenant id) or to refuse the call. They run in order on the thread that starts the call (for
// a pool's retry or a balancer's hedge: the thread that starts that attempt), once per
// attempt, for unary calls and stream opens alike.
//
//   struct tenant : corvid::client_interceptor {
//     corvid::rpc_error on_call(corvid::outgoing_call& call) override {
//       call.metadata().add("tenant", "acme");
//       return {};
//     }
//   };
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "corvid/call_metadata.hpp"
#include "corvid/error.hpp"
#include "corvid/export.hpp"

namespace corvid {

// The call an interceptor sees: what it calls, and the metadata it will carry (a copy of
// call_options::metadata, which the interceptors may edit; the caller's is left as it was).
class outgoing_call {
 public:
  outgoing_call(std::string_view function_name, std::uint32_t function_id) noexcept
      : name_(function_name), id_(function_id) {}
  // The function's qualified name ("ns::calc::add") and its wire id.
  std::string_view function_name() const noexcept { return name_; }
  std::uint32_t function_id() const noexcept { return id_; }
  corvid::metadata& metadata() noexcept { return metadata_; }
  const corvid::metadata& metadata() const noexcept { return metadata_; }

 private:
  std::string_view name_;
  std::uint32_t id_;
  corvid::metadata metadata_;
};

class client_interceptor {
 public:
  virtual ~client_interceptor() = default;
  // Falsy: go on. An error fails the call with it at once, without sending it, and the
  // interceptors after this one do not run. Throwing fails the call with rpc_errc::internal
  // (the message is what() says). May be called from many threads at once.
  virtual rpc_error on_call(outgoing_call& call) = 0;
};

namespace detail {
// Copies `md` (if any) into `call`, then runs `interceptors` on it in order: the first
// error, or falsy. Never throws (an exception becomes rpc_errc::internal).
CORVID_API rpc_error
run_interceptors(const std::vector<std::shared_ptr<client_interceptor>>& interceptors,
                 outgoing_call& call, const corvid::metadata* md) noexcept;
}  // namespace detail

}  // namespace corvid
