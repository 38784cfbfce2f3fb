#include "corvid/server/authorization.hpp"

#include <algorithm>
#include <utility>

#include <openssl/crypto.h>

namespace corvid {

bool pattern_matches(std::string_view pattern, std::string_view name) noexcept {
  if (!pattern.empty() && pattern.back() == '*') {
    pattern.remove_suffix(1);
    return name.starts_with(pattern);
  }
  return pattern == name;
}

namespace {

// "*.example.org" matches "a.example.org" and "a.b.example.org", never "example.org"; other
// patterns as pattern_matches. DNS names compare without case.
bool dns_matches(std::string_view pattern, std::string_view name) noexcept {
  auto lower_equal = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             auto l = [](char c) {
               return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
             };
             return l(x) == l(y);
           });
  };
  if (pattern.starts_with("*.")) {
    const std::string_view suffix = pattern.substr(1);  // ".example.org"
    return name.size() > suffix.size() &&
           lower_equal(name.substr(name.size() - suffix.size()), suffix);
  }
  return lower_equal(pattern, name);
}

bool any_matches(const std::vector<std::string>& names, std::string_view pattern) noexcept {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return pattern_matches(pattern, n); });
}

bool bearer_matches(const metadata_view& md, const std::string& token) noexcept {
  constexpr std::string_view scheme = "Bearer ";
  for (metadata_entry e : md) {
    if (e.key != "authorization" || !e.value.starts_with(scheme)) continue;
    const std::string_view given = e.value.substr(scheme.size());
    if (given.size() == token.size() &&
        CRYPTO_memcmp(given.data(), token.data(), token.size()) == 0)
      return true;
  }
  return false;
}

}  // namespace

principals principals::anyone() { return principals().add({kind::anyone, {}}); }
principals principals::authenticated() { return principals().add({kind::authenticated, {}}); }
principals& principals::subject(std::string p) { return add({kind::subject, std::move(p)}); }
principals& principals::dns_name(std::string p) { return add({kind::dns, std::move(p)}); }
principals& principals::uri(std::string p) { return add({kind::uri, std::move(p)}); }
principals& principals::ip_address(std::string a) { return add({kind::ip, std::move(a)}); }
principals& principals::fingerprint(std::string f) {
  return add({kind::fingerprint, std::move(f)});
}
principals& principals::unix_uid(std::uint32_t uid) { return add({kind::uid, {}, uid}); }
principals& principals::unix_gid(std::uint32_t gid) { return add({kind::gid, {}, gid}); }
principals& principals::bearer_token(std::string token) {
  return add({kind::bearer, std::move(token)});
}
principals& principals::where(std::function<bool(const call_info&)> predicate) {
  return add({kind::predicate, {}, 0, std::move(predicate)});
}

principals& principals::add(entry e) {
  if (e.what == kind::anyone || e.what == kind::bearer || e.what == kind::predicate)
    credentials_ = true;
  entries_.push_back(std::move(e));
  return *this;
}

bool principals::matches(const call_info& call) const {
  const peer_identity& id = *call.identity;
  for (const entry& e : entries_) {
    switch (e.what) {
      case kind::anyone:
        return true;
      case kind::authenticated:
        if (id.authenticated()) return true;
        break;
      case kind::subject:
        if (id.has_certificate && pattern_matches(e.pattern, id.subject)) return true;
        break;
      case kind::dns:
        if (std::any_of(id.dns_names.begin(), id.dns_names.end(),
                        [&](const std::string& n) { return dns_matches(e.pattern, n); }))
          return true;
        break;
      case kind::uri:
        if (any_matches(id.uris, e.pattern)) return true;
        break;
      case kind::ip:
        if (std::find(id.ip_addresses.begin(), id.ip_addresses.end(), e.pattern) !=
            id.ip_addresses.end())
          return true;
        break;
      case kind::fingerprint:
        if (id.has_certificate && id.fingerprint_sha256 == e.pattern) return true;
        break;
      case kind::uid:
        if (id.unix_peer && id.unix_peer->uid == e.id) return true;
        break;
      case kind::gid:
        if (id.unix_peer && id.unix_peer->gid == e.id) return true;
        break;
      case kind::bearer:
        if (bearer_matches(call.metadata, e.pattern)) return true;
        break;
      case kind::predicate:
        if (e.predicate && e.predicate(call)) return true;
        break;
    }
  }
  return false;
}

authorization_policy& authorization_policy::allow(std::string methods, principals who) {
  rules_.push_back({std::move(methods), std::move(who)});
  return *this;
}

call_verdict authorization_policy::on_call(const call_info& call) {
  bool covered = false;      // some rule names the method
  bool credentials = false;  // one of those could admit a caller without a transport identity
  for (const rule& r : rules_) {
    if (!pattern_matches(r.methods, call.method)) continue;
    if (r.who.matches(call)) return call_verdict::proceed();
    covered = true;
    credentials = credentials || r.who.accepts_credentials();
  }
  if (covered && !call.identity->authenticated()) {
    return call_verdict::refuse_static(
        rpc_errc::unauthenticated,
        credentials ? "no credential this server accepts for this method came with the call"
                    : "this method needs an authenticated caller (a verified client certificate "
                      "or a Unix socket peer), and this connection proved none");
  }
  return call_verdict::refuse_static(
      rpc_errc::permission_denied,
      covered ? "the authorization policy does not allow this caller to call this method"
              : "the authorization policy allows no caller to call this method");
}

}  // namespace corvid
