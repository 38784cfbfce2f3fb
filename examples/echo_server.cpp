// The seed's server: `echo_server <port>` serves until killed (or SIGINT/SIGTERM).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "echo_api.hpp"

namespace {
corvid::rpc_server* running = nullptr;
void on_signal(int) {
  // stop() is not async-signal-safe; hand it to a thread.
  std::thread([] { running->stop(); }).detach();
}
}  // namespace

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 9000);
  corvid::rpc_server server(/*io threads*/ 2, port);
  server.register_handler<echo, add, move>();
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "echo_server: %s\n", ec.message().c_str());
    return 1;
  }
  running = &server;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::printf("listening on %u\n", server.port());
  std::fflush(stdout);
  server.start();  // already started: blocks until stop()
  return 0;
}
