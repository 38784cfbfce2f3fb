#pragma once
// Per-method call settings in one place: the timeout, whether a method may run twice, its
// retries and its hedging, for one method, a namespace of methods or every method. Set in code
// or read from a JSON document (a language-neutral form; the Python client reads it too,
// corvid.MethodConfig):
//
//   corvid::lb_config cfg;
//   cfg.methods.set<&get_user>({.timeout = 200ms, .idempotent = true,
//                               .hedging = corvid::hedging_policy{.delay = 20ms}});
//   cfg.methods.set("inventory::", {.timeout = 2s});  // every method of that namespace
//   auto m = corvid::method_config::parse(R"({"methods": [
//       {"name": "get_user", "timeout_ms": 200, "idempotent": true,
//        "hedging": {"max_copies": 2, "delay_ms": 20}},
//       {"name": "*", "timeout_ms": 1000}]})");
//
// A call takes each setting from the most specific entry that has it: the method's own name,
// then the longest namespace that contains it, then "*"; a timeout given with the call
// (call_for, call_options::timeout) overrides the method's, call_options::hedging the
// method's hedging and call_options::compress its compression. A load_balancer
// (lb_config::methods) applies every setting; a plain rpc_client and a client_pool
// (client_config::methods, pool_config::client) the timeouts and compression, since one
// endpoint gives a call nowhere else to go again.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "corvid/expected.hpp"
#include "corvid/export.hpp"
#include "corvid/protocol/function_id.hpp"

namespace corvid {

// Hedged requests (brpc's backup requests, gRPC's hedging): when the first copy of a call of
// an idempotent method has not answered after `delay`, another copy goes to a different
// endpoint, up to `max_copies` in flight; the first answer wins and the others are cancelled
// on the wire, so their servers stop work. Each further copy takes from the retry budget, and
// none is sent with less than `delay` left before the call's deadline.
struct hedging_policy {
  unsigned max_copies = 2;  // the first copy included; below 2 nothing is hedged
  std::chrono::milliseconds delay{10};
  // In (0, 1): wait for that quantile of the method's recent latencies instead (at least
  // `delay`), so the hedge goes out only for the slowest calls; 0 = always `delay`.
  double delay_quantile = 0;
};

struct method_policy {
  std::optional<std::chrono::milliseconds> timeout{};  // at least 1 ms (less is taken as 1)
  std::optional<bool> idempotent{};                    // may run more than once
  // Attempts per call with retry_policy's back-off and budget (lb_config::retry); a method
  // that is not idempotent is only ever sent again when its request never left.
  std::optional<unsigned> max_attempts{};
  std::optional<hedging_policy> hedging{};
  // false: this method's requests are never compressed (their payloads are compressed
  // already, or too small to gain); true or unset: as the connection's compression allows
  // (client_config::compression, corvid/compression.hpp).
  std::optional<bool> compress{};
};

class CORVID_API method_config {
 public:
  // `name`: a method's qualified name as the server registers it ("shop::get_user"), a
  // namespace ending in "::" ("shop::"), or "*" for every method. Setting a name again
  // replaces its entry.
  method_config& set(std::string name, method_policy policy);
  template <auto F>
  method_config& set(method_policy policy) {
    return set(std::string(protocol::function_name_v<F>), std::move(policy));
  }
  // The settings that apply to a method (each from the most specific entry that has it).
  method_policy resolve(std::uint32_t id, std::string_view name) const;
  template <auto F>
  method_policy resolve() const {
    return resolve(protocol::function_id_v<F>, protocol::function_name_v<F>);
  }
  bool empty() const noexcept { return entries_.empty(); }
  // Some entry hedges after a quantile of recent latencies (the balancer then keeps them).
  bool uses_delay_quantile() const noexcept;

  // {"methods": [{"name": ..., "timeout_ms": N, "idempotent": B, "max_attempts": N,
  //   "hedging": {"max_copies": N, "delay_ms": N, "delay_quantile": Q}, "compress": B}, ...]}.
  //   Unknown keys
  // and values out of range are errors (a misspelt setting must not be ignored silently).
  static expected<method_config, std::string> parse(std::string_view json);

 private:
  struct entry {
    std::string name;
    std::uint32_t id = 0;  // a method's entry: the hash of its name
    method_policy policy;
  };
  // Methods first, then namespaces from the longest, then "*": resolve() fills each setting
  // from the first entry that matches and has it.
  std::vector<entry> entries_;
};

}  // namespace corvid
