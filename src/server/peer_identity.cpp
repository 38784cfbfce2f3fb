#include "corvid/server/peer_identity.hpp"

namespace corvid {

std::string peer_identity::describe() const {
  std::string out;
  auto list = [&out](const char* name, const std::vector<std::string>& v) {
    if (v.empty()) return;
    out += ' ';
    out += name;
    out += "=[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i != 0) out += ',';
      out += v[i];
    }
    out += ']';
  };
  if (has_certificate) {
    out += "subject=" + subject;
    list("dns", dns_names);
    list("uris", uris);
    list("ips", ip_addresses);
    out += " sha256=" + fingerprint_sha256.substr(0, 16);
  }
  if (unix_peer) {
    if (!out.empty()) out += ' ';
    out += "unix uid=" + std::to_string(unix_peer->uid) + " gid=" + std::to_string(unix_peer->gid) +
           " pid=" + std::to_string(unix_peer->pid);
  }
  return out.empty() ? "none" : out;
}

}  // namespace corvid
