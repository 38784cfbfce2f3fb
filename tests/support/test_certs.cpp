#include "test_certs.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace corvid::test {
namespace {

struct key_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct cert_free {
  void operator()(X509* c) const { X509_free(c); }
};
using key_ptr = std::unique_ptr<EVP_PKEY, key_free>;
using cert_ptr = std::unique_ptr<X509, cert_free>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test_certs: ") + what);
}

key_ptr new_key() {
  key_ptr k(EVP_EC_gen("P-256"));
  check(k != nullptr, "EVP_EC_gen");
  return k;
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// Valid from `from_days` to `to_days` relative to now; self-signed when issuer is null.
cert_ptr make_cert(EVP_PKEY* key, const char* cn, const char* san, X509* issuer,
                   EVP_PKEY* issuer_key, bool is_ca, long from_days, long to_days) {
  static long serial = 1;
  cert_ptr c(X509_new());
  check(c != nullptr, "X509_new");
  X509_set_version(c.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(c.get()), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), to_days * 86400);
  X509_set_pubkey(c.get(), key);
  X509_NAME* name = X509_get_subject_name(c.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : c.get();
  X509_set_issuer_name(c.get(), X509_get_subject_name(signer));
  if (is_ca) {
    add_ext(c.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(c.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(c.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(c.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  if (san != nullptr) add_ext(c.get(), signer, NID_subject_alt_name, san);
  add_ext(c.get(), signer, NID_subject_key_identifier, "hash");
  check(X509_sign(c.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0,
        "X509_sign");
  return c;
}

std::string pem(X509* c) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, c);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(b);
  return out;
}

std::string pem(EVP_PKEY* k) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(b);
  return out;
}

}  // namespace

test_certs::test_certs() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "corvid-certs-XXXXXX").string();
  check(::mkdtemp(tmpl.data()) != nullptr, "mkdtemp");
  dir = tmpl;
  const char* server_san = "DNS:localhost,IP:127.0.0.1,IP:::1";

  auto ca_key = new_key();
  auto ca_cert = make_cert(ca_key.get(), "corvid test CA", nullptr, nullptr, nullptr, true, -1, 30);
  ca = write("ca.pem", pem(ca_cert.get()));

  auto issue = [&](const char* file, const char* cn, const char* san, X509* issuer,
                   EVP_PKEY* issuer_key, long from, long to, std::string& cert_path,
                   std::string& key_path) {
    auto key = new_key();
    auto cert = make_cert(key.get(), cn, san, issuer, issuer_key, false, from, to);
    cert_path = write(std::string(file) + ".pem", pem(cert.get()));
    key_path = write(std::string(file) + ".key", pem(key.get()));
  };
  issue("server", "localhost", server_san, ca_cert.get(), ca_key.get(), -1, 30, server_cert,
        server_key);
  issue("client", "corvid-client", nullptr, ca_cert.get(), ca_key.get(), -1, 30, client_cert,
        client_key);
  issue("san_client", "corvid-san-client",
        "DNS:alice.example,DNS:alice.internal,URI:spiffe://example.org/ns/prod/sa/alice,"
        "IP:10.1.2.3,IP:2001:db8::7",
        ca_cert.get(), ca_key.get(), -1, 30, san_client_cert, san_client_key);
  std::string many;
  for (int i = 0; i < many_names_count; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "%sDNS:host-%04d.a-rather-long-name.example.org", i ? "," : "",
                  i);
    many += name;
  }
  issue("many_names", "corvid-many-names", many.c_str(), ca_cert.get(), ca_key.get(), -1, 30,
        many_names_cert, many_names_key);
  issue("expired", "localhost", server_san, ca_cert.get(), ca_key.get(), -20, -10, expired_cert,
        expired_key);
  issue("wrong_name", "elsewhere.example", "DNS:elsewhere.example", ca_cert.get(), ca_key.get(), -1,
        30, wrong_name_cert, wrong_name_key);

  auto other_key = new_key();
  auto other_cert =
      make_cert(other_key.get(), "another CA", nullptr, nullptr, nullptr, true, -1, 30);
  other_ca = write("other_ca.pem", pem(other_cert.get()));
  issue("stranger", "localhost", server_san, other_cert.get(), other_key.get(), -1, 30,
        stranger_cert, stranger_key);
}

test_certs::~test_certs() {
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

std::string test_certs::write(const std::string& name, const std::string& text) const {
  const std::string path = (std::filesystem::path(dir) / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace corvid::test
