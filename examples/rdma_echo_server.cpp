// Seed 000's RDMA server: `rdma_echo_server <port>` is echo_server plus one line,
// server.init_ibv(). It serves RDMA clients (and plain TCP ones) until SIGINT/SIGTERM.
// Without a NIC, run it with CORVID_VERBS_PROVIDER=soft (corvid's software verbs).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>

#include <corvid/server.hpp>

#include "echo_api.hpp"

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 9000);
  sigset_t stop_signals;  // blocked before any thread starts; main takes them in sigwait
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  corvid::rpc_server server(/*io threads*/ 2, port);
  server.register_handler<echo, add, move>();
  if (auto ec = server.init_ibv()) {  // RDMA resources; fails clearly when there is no device
    std::fprintf(stderr, "rdma_echo_server: %s\n", ec.message().c_str());
    return 1;
  }
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "rdma_echo_server: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening on %u (rdma)\n", server.port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  server.stop();
  return 0;
}
