#pragma once
// Who is at the other end of a server connection, as the transport proved it: the verified
// client certificate of a mutual-TLS connection, and the peer process of a Unix-domain socket
// (SO_PEERCRED). Computed once, when the connection is set up; every call on the connection
// sees the same one (request_context::identity(), call_info::identity).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "corvid/export.hpp"

namespace corvid {

// The peer process of a Unix-domain socket connection, as the kernel reports it at connect.
struct unix_peer_credentials {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::int32_t pid = 0;
};

struct peer_identity {
  // A client certificate the server verified against tls_config::ca_file. Without
  // one (plaintext, TLS without a client certificate) every certificate field is empty.
  bool has_certificate = false;
  // The certificate's subject, RFC 2253 ("CN=alice,OU=payments,O=example").
  std::string subject;
  // Its subjectAltName entries by kind, in certificate order: DNS names, URIs (a SPIFFE id
  // is one: "spiffe://example.org/ns/prod/sa/api") and IP addresses (as text: "10.0.0.7",
  // "2001:db8::1").
  std::vector<std::string> dns_names;
  std::vector<std::string> uris;
  std::vector<std::string> ip_addresses;
  // SHA-256 of the certificate's DER bytes, lowercase hex (64 characters).
  std::string fingerprint_sha256;
  // A Unix-domain socket connection: the connecting process (its uid is what matters on
  // one host). Empty on TCP.
  std::optional<unix_peer_credentials> unix_peer;

  // True when the transport proved anything: a verified certificate or Unix credentials.
  bool authenticated() const noexcept { return has_certificate || unix_peer.has_value(); }
  // One line for logs: "subject=CN=alice uris=[spiffe://…] sha256=ab12…", "unix uid=1000
  // gid=1000 pid=4242", or "none".
  CORVID_API std::string describe() const;
};

}  // namespace corvid
