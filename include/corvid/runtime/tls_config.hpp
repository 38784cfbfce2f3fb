#pragma once
// TLS for a server (rpc_server::init_tls) or a client (rpc_client::init_tls, or
// client_config::tls for pools and load balancers). Files are PEM. TLS 1.2 and 1.3 (1.3
// preferred); OpenSSL's default cipher suites minus the weak ones.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "corvid/error.hpp"

namespace corvid {

struct tls_config {
  // This side's certificate (leaf first, then intermediates) and its private key. Required
  // on a server; on a client, the certificate it presents for mutual TLS (optional).
  std::string certificate_chain_file{};
  std::string private_key_file{};
  // Certificates to verify the peer against. Client: the server's chain is always verified,
  // against this file or, when empty, the system's trust store. Server: when set, client
  // certificates are requested and verified (mutual TLS).
  std::string ca_file{};
  // Server: a client without a valid certificate is refused (needs ca_file).
  bool require_client_certificate = false;
  // Client: the name (or IP address) the server's certificate must carry; a name is also
  // sent as SNI. Empty: the host given to connect().
  std::string server_name{};
  // Server: also accept plaintext clients on the same port (the first byte tells), for a
  // migration to TLS. Off: a plaintext client is told the server requires TLS, and closed.
  bool allow_plaintext = false;
  // Server: a handshake not finished this long after its first byte closes the connection.
  // (A client's handshake counts against its connect_timeout.)
  std::chrono::milliseconds handshake_timeout{10'000};
  // Server: told about each handshake that failed (peer address, why), on a reactor thread.
  std::function<void(std::string_view peer, const rpc_error& why)> on_handshake_error{};
};

}  // namespace corvid
