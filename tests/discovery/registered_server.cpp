// A server in its own process, registered in etcd (an empty URL: not registered), for the
// tests that SIGKILL one:
//   registered_server <registry url> <name> <ttl seconds> [port]
// Prints "port N" once serving; SIGUSR1 makes its health not_serving, SIGUSR2 serving again;
// runs until killed.
#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <string>

#include "discovery_support.hpp"

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: registered_server <registry url> <name> <ttl seconds> [port]\n");
    return 2;
  }
  // Blocked in every thread (the server's inherit the mask): taken by sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto cfg = discovery_test::server_config(argv[1]);
  cfg.registry_ttl = std::chrono::seconds(std::stoi(argv[3]));
  if (argc == 5) cfg.port = static_cast<std::uint16_t>(std::stoi(argv[4]));
  discovery_test::named_server s(argv[2], cfg);
  std::printf("port %u\n", static_cast<unsigned>(s.server().port()));
  std::fflush(stdout);
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) == 0) s.server().set_serving(sig == SIGUSR2);
  }
}
