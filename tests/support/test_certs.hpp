#pragma once
// Certificates made at run time for TLS tests and `corvid-bench --tls`: a CA, a server
// certificate for "localhost" and 127.0.0.1 signed by it, a client certificate, and the
// broken ones a test needs (expired, signed by another CA, for another name). P-256 keys,
// so a whole set takes milliseconds. Files are PEM, written under one temporary directory
// that goes away with the object.
#include <string>

namespace corvid::test {

class test_certs {
 public:
  test_certs();  // throws std::runtime_error when OpenSSL fails
  ~test_certs();
  test_certs(const test_certs&) = delete;
  test_certs& operator=(const test_certs&) = delete;

  std::string ca;           // the CA's certificate
  std::string server_cert;  // CN/SAN localhost, IP 127.0.0.1, ::1; signed by ca
  std::string server_key;
  std::string client_cert;  // CN corvid-client; signed by ca
  std::string client_key;
  // CN corvid-san-client, signed by ca, with one subjectAltName of each kind a peer_identity
  // reads: san_client_dns, san_client_uri, san_client_ips (IPv4, then IPv6).
  std::string san_client_cert;
  std::string san_client_key;
  static constexpr const char* san_client_subject = "CN=corvid-san-client";
  static constexpr const char* san_client_dns[] = {"alice.example", "alice.internal"};
  static constexpr const char* san_client_uri = "spiffe://example.org/ns/prod/sa/alice";
  static constexpr const char* san_client_ips[] = {"10.1.2.3", "2001:db8::7"};
  // CN corvid-many-names, signed by ca, with many_names_count DNS names of 40 characters
  // each: an identity of about 28 KiB that the server must charge.
  std::string many_names_cert;
  std::string many_names_key;
  static constexpr int many_names_count = 400;
  std::string expired_cert;  // like server_cert, but valid only in the past
  std::string expired_key;
  std::string other_ca;       // a second CA, trusting nothing above
  std::string stranger_cert;  // a server certificate signed by other_ca
  std::string stranger_key;
  std::string wrong_name_cert;  // signed by ca, for "elsewhere.example" only
  std::string wrong_name_key;
  std::string dir;

  // Writes `text` to a new file in dir and returns its path.
  std::string write(const std::string& name, const std::string& text) const;
};

}  // namespace corvid::test
