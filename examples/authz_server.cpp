// A mutual-TLS server with an authorization policy:
//
//   AUTHZ_TOKEN=... authz_server <port> <cert.pem> <key.pem> <ca.pem>
//
// whoami is open to the workloads on a SPIFFE-id allowlist (the URI in their client
// certificate), read_report to callers that present the bearer token; every other call is
// refused (deny by default). Serves until SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <pthread.h>
#include <string>

#include <corvid/server.hpp>

#include "authz_api.hpp"

std::string whoami(corvid::request_context& ctx) {
  // What the transport proved, once per connection: the verified certificate's subject,
  // SANs (uris holds the SPIFFE id) and fingerprint.
  const corvid::peer_identity& id = ctx.identity();
  std::printf("whoami: %s\n", id.describe().c_str());
  std::fflush(stdout);
  return id.uris.empty() ? id.subject : id.uris.front();
}

std::string read_report(corvid::request_context& ctx, std::string name) {
  std::printf("read_report(%s): %s\n", name.c_str(), ctx.identity().describe().c_str());
  std::fflush(stdout);
  ctx.response_metadata().add("report-version", "7");  // metadata back to the caller
  return "report " + name + ": all green";
}

int main(int argc, char** argv) {
  const char* token = std::getenv("AUTHZ_TOKEN");
  if (argc != 5 || token == nullptr || *token == '\0') {
    std::fprintf(stderr, "usage: AUTHZ_TOKEN=<token> authz_server <port> <cert> <key> <ca>\n");
    return 2;
  }
  sigset_t stop_signals;  // blocked before any thread starts: main takes them in sigwait
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  corvid::server_config cfg;
  cfg.port = static_cast<std::uint16_t>(std::atoi(argv[1]));
  corvid::rpc_server server(cfg);
  server.register_handler<whoami, read_report>();

  auto policy = std::make_shared<corvid::authorization_policy>();
  policy->allow("whoami", corvid::principals()
                              .uri("spiffe://example.org/ns/prod/sa/reporter")
                              .uri("spiffe://example.org/ns/prod/sa/auditor"));
  policy->allow("read_report", corvid::principals().bearer_token(token));
  server.add_interceptor(policy);

  corvid::tls_config tls;
  tls.certificate_chain_file = argv[2];
  tls.private_key_file = argv[3];
  tls.ca_file = argv[4];  // verify client certificates (mutual TLS)
  if (auto ec = server.init_tls(tls)) {
    std::fprintf(stderr, "authz_server: %s\n", ec.message().c_str());
    return 1;
  }
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "authz_server: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening on %u\n", server.port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  server.stop();
  return 0;
}
