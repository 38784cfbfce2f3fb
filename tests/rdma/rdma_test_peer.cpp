// A separate RDMA server process for the "peer killed mid-call" test: serves the RDMA test
// handlers over the tests' verbs provider
// (test_provider.hpp, inherited through the environment) on an ephemeral port, prints "port N", and
// runs until killed.
#include <cstdio>
#include <thread>

#include "rdma_support.hpp"

int main() {
  corvid::rpc_server server(corvid_rdma_test::server_config());
  server.register_handler<corvid_rdma_test::echo, corvid_rdma_test::add,
                          corvid_rdma_test::block_ms>();
  if (auto ec = server.init_ibv(corvid_rdma_test::test_ibv())) {
    std::fprintf(stderr, "init_ibv: %s\n", ec.message().c_str());
    return 1;
  }
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "start: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("port %u\n", server.port());
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
