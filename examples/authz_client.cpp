// The authorization example's client:
//
//   AUTHZ_TOKEN=... authz_client <host:port> <ca.pem> [<cert.pem> <key.pem>]
//
// Connects over TLS (with a client certificate when given one), adds the bearer token to
// every call with a bearer_token_provider, and calls whoami and read_report. Exits 0 when
// both succeed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <corvid/client.hpp>
#include <corvid/client/bearer_token.hpp>

#include "authz_api.hpp"

corvid::task<int> run(corvid::client_config config, std::string endpoint) {
  corvid::rpc_client client(std::move(config));
  if (auto ec = co_await client.connect(endpoint)) {
    std::fprintf(stderr, "connect: %s\n", ec.message().c_str());
    co_return 1;
  }
  int failed = 0;
  auto me = co_await client.call<whoami>();
  if (me) {
    std::printf("whoami: %s\n", me->c_str());
  } else {
    ++failed;
    std::printf("whoami refused: %s (%s)\n", std::string(to_string(me.error().code())).c_str(),
                me.error().message().c_str());
  }

  corvid::metadata reply;  // the reply's metadata lands here
  corvid::call_options options;
  options.reply_metadata = &reply;
  auto report = co_await client.call_with<read_report>(options, std::string("daily"));
  if (report) {
    std::printf("read_report: %s (report-version %s)\n", report->value.c_str(),
                std::string(reply.find("report-version").value_or("?")).c_str());
  } else {
    ++failed;
    std::printf("read_report refused: %s (%s)\n",
                std::string(to_string(report.error().code())).c_str(),
                report.error().message().c_str());
  }
  co_return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::fprintf(stderr,
                 "usage: AUTHZ_TOKEN=<token> authz_client <host:port> <ca> [<cert> <key>]\n");
    return 2;
  }
  corvid::client_config config;
  config.tls = corvid::tls_config{.ca_file = argv[2]};
  if (argc == 5) {
    config.tls->certificate_chain_file = argv[3];
    config.tls->private_key_file = argv[4];
  }
  // The fetch stands in for an identity provider. The provider refreshes the token on a thread
  // of its own before it expires, so only the first call waits for a fetch.
  config.interceptors.push_back(std::make_shared<corvid::bearer_token_provider>(
      []() -> corvid::expected<corvid::bearer_token, corvid::rpc_error> {
        const char* token = std::getenv("AUTHZ_TOKEN");
        if (token == nullptr || *token == '\0')
          return corvid::unexpected(
              corvid::rpc_error(corvid::rpc_errc::unauthenticated, "AUTHZ_TOKEN is not set"));
        return corvid::bearer_token{token, std::chrono::minutes(10)};
      }));
  return corvid::sync_wait(run(std::move(config), argv[1]));
}
