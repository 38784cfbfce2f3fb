#pragma once
// An authorization policy: which callers may call which methods, as a server interceptor.
// Once installed (rpc_server::add_interceptor(policy)), a call runs only if a rule allows it:
// deny by default. A call no rule allows is refused unauthenticated when its caller proved
// no identity (no verified certificate, no Unix credentials, no credential a rule accepts),
// permission_denied otherwise. Refusals allocate nothing.
//
//   auto policy = std::make_shared<corvid::authorization_policy>();
//   policy->allow("inventory::*", corvid::principals().uri("spiffe://example.org/ns/prod/*"))
//       .allow("health::*", corvid::principals::anyone())
//       .allow("admin::*", corvid::principals().unix_uid(0));
//   server.add_interceptor(policy);
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "corvid/export.hpp"
#include "corvid/server/interceptor.hpp"

namespace corvid {

// A set of callers, matched against a call's identity and metadata. A caller in the set
// matches any one of its entries. Patterns: exact, or ending in '*' (a prefix); a DNS
// pattern "*.example.org" matches one or more labels in front of ".example.org".
class CORVID_API principals {
 public:
  // Every caller, with or without an identity.
  static principals anyone();
  // Every caller whose transport proved an identity (a verified certificate, Unix credentials).
  static principals authenticated();

  principals& subject(std::string pattern);     // the certificate's RFC 2253 subject
  principals& dns_name(std::string pattern);    // any of its DNS SANs
  principals& uri(std::string pattern);         // any of its URI SANs (SPIFFE ids)
  principals& ip_address(std::string address);  // any of its IP SANs, as text
  principals& fingerprint(std::string sha256);  // its SHA-256, lowercase hex
  principals& unix_uid(std::uint32_t uid);      // a Unix-socket peer's user
  principals& unix_gid(std::uint32_t gid);      // ... or group
  // A call whose metadata carries "authorization: Bearer <token>" with this token (compared
  // in constant time). A token is a shared secret: send it only over TLS or a Unix socket.
  principals& bearer_token(std::string token);
  // Any caller the predicate accepts.
  principals& where(std::function<bool(const call_info&)> predicate);

  bool matches(const call_info& call) const;
  // Whether an entry may match a caller without a transport identity (a bearer token, a
  // predicate, anyone): such a caller refused is told permission_denied, not unauthenticated.
  bool accepts_credentials() const noexcept { return credentials_; }

 private:
  enum class kind : std::uint8_t {
    anyone,
    authenticated,
    subject,
    dns,
    uri,
    ip,
    fingerprint,
    uid,
    gid,
    bearer,
    predicate
  };
  struct entry {
    entry(kind k, std::string p = {}, std::uint32_t i = 0,
          std::function<bool(const call_info&)> f = {})
        : what(k), pattern(std::move(p)), id(i), predicate(std::move(f)) {}
    kind what;
    std::string pattern;
    std::uint32_t id;
    std::function<bool(const call_info&)> predicate;
  };
  principals& add(entry e);
  std::vector<entry> entries_;
  bool credentials_ = false;
};

class CORVID_API authorization_policy final : public server_interceptor {
 public:
  // Calls of the methods `methods` names ("inventory::get", a namespace "inventory::*", or
  // "*" for all) are allowed for `who`. Rules add up: a call runs when any rule allows it.
  // Before the server starts.
  authorization_policy& allow(std::string methods, principals who);

  call_verdict on_call(const call_info& call) override;

 private:
  struct rule {
    std::string methods;
    principals who;
  };
  std::vector<rule> rules_;
};

// Whether `name` matches `pattern`: equal, or `pattern` ends in '*' and the rest is a prefix.
CORVID_API bool pattern_matches(std::string_view pattern, std::string_view name) noexcept;

}  // namespace corvid
