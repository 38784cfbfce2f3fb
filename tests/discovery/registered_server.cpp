// A server in its own process, registered in etcd, for the tests that SIGKILL one:
//   registered_server <registry url> <name> <ttl seconds>
// Prints "port N" once serving; runs until killed.
#include <cstdio>
#include <string>
#include <thread>

#include "discovery_support.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: registered_server <registry url> <name> <ttl seconds>\n");
    return 2;
  }
  auto cfg = discovery_test::server_config(argv[1]);
  cfg.registry_ttl = std::chrono::seconds(std::stoi(argv[3]));
  discovery_test::named_server s(argv[2], cfg);
  std::printf("port %u\n", static_cast<unsigned>(s.server().port()));
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
