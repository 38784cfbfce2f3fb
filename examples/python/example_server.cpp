// The server of the Python example (examples/python/example.py, README "From Python"):
// `example_server [port]` serves echo, add, shift and count_to until SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <string>
#include <string_view>
#include <vector>

#include <corvid/server.hpp>

inline std::string_view echo(std::string_view s) { return s; }

inline corvid::task<int> add(int a, int b) { co_return a + b; }

struct point {
  int x;
  double y;
  std::string tag;
  std::vector<int> v;
};
inline point shift(point p, int dx) {
  p.x += dx;
  p.v.push_back(dx);
  return p;
}

inline corvid::stream<int> count_to(int n) {
  for (int i = 1; i <= n; ++i) co_yield i;
}

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 9000);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.port = port;
  cfg.io_threads = 1;
  corvid::rpc_server server(cfg);
  server.register_handler<echo, add, shift, count_to>();
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "example_server: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening on %u\n", server.port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  server.stop();
  return 0;
}
