// A connection's peer_identity from OpenSSL's verified peer certificate and from the kernel's
// SO_PEERCRED.
#include "transport_identity.hpp"

#include <array>
#include <memory>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

namespace corvid::detail {
namespace {

struct x509_free {
  void operator()(X509* c) const noexcept { X509_free(c); }
};
struct bio_free {
  void operator()(BIO* b) const noexcept { BIO_free(b); }
};
struct names_free {
  void operator()(GENERAL_NAMES* n) const noexcept { GENERAL_NAMES_free(n); }
};

std::string rfc2253(const X509_NAME* name) {
  std::unique_ptr<BIO, bio_free> bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0) return {};
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

std::string text_of(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<std::size_t>(ASN1_STRING_length(s)));
}

// An iPAddress entry holds 4 (IPv4) or 16 (IPv6) raw bytes; anything else is malformed and
// skipped.
void add_ip(const ASN1_OCTET_STRING* s, std::vector<std::string>& out) {
  const int family = ASN1_STRING_length(s) == 4    ? AF_INET
                     : ASN1_STRING_length(s) == 16 ? AF_INET6
                                                   : -1;
  if (family < 0) return;
  std::array<char, INET6_ADDRSTRLEN> buf{};
  if (::inet_ntop(family, ASN1_STRING_get0_data(s), buf.data(), buf.size()) != nullptr) {
    out.emplace_back(buf.data());
  }
}

void read_alt_names(X509* cert, peer_identity& out) {
  std::unique_ptr<GENERAL_NAMES, names_free> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (!names) return;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names.get(), i);
    switch (n->type) {
      case GEN_DNS:
        out.dns_names.push_back(text_of(n->d.dNSName));
        break;
      case GEN_URI:
        out.uris.push_back(text_of(n->d.uniformResourceIdentifier));
        break;
      case GEN_IPADD:
        add_ip(n->d.iPAddress, out.ip_addresses);
        break;
      default:
        break;  // e-mail, directory names, ...: not part of peer_identity
    }
  }
}

std::string sha256_hex(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (X509_digest(cert, EVP_sha256(), md, &len) != 1) return {};
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    hex += digits[md[i] >> 4];
    hex += digits[md[i] & 0xf];
  }
  return hex;
}

}  // namespace

void read_certificate_identity(SSL* ssl, peer_identity& out) {
  out.has_certificate = false;
  if (ssl == nullptr) return;
  // SSL_get1_peer_certificate: a reference of our own, released here.
  std::unique_ptr<X509, x509_free> cert(SSL_get1_peer_certificate(ssl));
  // Without require_client_certificate a handshake can complete with a certificate that
  // failed verification: such a certificate proves nothing.
  if (!cert || SSL_get_verify_result(ssl) != X509_V_OK) return;
  out.subject = rfc2253(X509_get_subject_name(cert.get()));
  read_alt_names(cert.get(), out);
  out.fingerprint_sha256 = sha256_hex(cert.get());
  out.has_certificate = true;
}

std::size_t held_bytes(const peer_identity& id) noexcept {
  // A short string lives inside its object (no allocation); a longer one holds capacity + 1.
  static const std::size_t inline_capacity = std::string().capacity();
  auto heap = [](const std::string& s) {
    return s.capacity() > inline_capacity ? s.capacity() + 1 : 0;
  };
  std::size_t n = heap(id.subject) + heap(id.fingerprint_sha256);
  for (const auto* names : {&id.dns_names, &id.uris, &id.ip_addresses}) {
    n += names->capacity() * sizeof(std::string);
    for (const std::string& s : *names) n += heap(s);
  }
  return n;
}

std::optional<unix_peer_credentials> unix_peer_of(int fd) noexcept {
  struct ucred cred {};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
    return std::nullopt;
  }
  return unix_peer_credentials{static_cast<std::uint32_t>(cred.uid),
                               static_cast<std::uint32_t>(cred.gid),
                               static_cast<std::int32_t>(cred.pid)};
}

}  // namespace corvid::detail
