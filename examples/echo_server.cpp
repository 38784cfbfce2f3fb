// The seed's server: `echo_server <port>` serves until SIGINT/SIGTERM, then stops gracefully.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>

#include <corvid/server.hpp>

#include "echo_api.hpp"

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 9000);
  // Block the stop signals before any thread starts, so every reactor inherits the mask and
  // main receives them in sigwait below (no async-signal-safety concerns).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  corvid::rpc_server server(/*io threads*/ 2, port);
  server.register_handler<echo, add, move>();
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "echo_server: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening on %u\n", server.port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  server.stop();
  return 0;
}
