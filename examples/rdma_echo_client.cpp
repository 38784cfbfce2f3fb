// Seed 000's RDMA client: `rdma_echo_client <host:port> [calls]` is echo_client plus one
// line, client.init_ibv(); every call below then travels over an RDMA queue pair.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <corvid/client.hpp>

#include "echo_api.hpp"

corvid::task<int> run(std::string endpoint, int calls) {
  corvid::rpc_client client;
  if (auto ec = client.init_ibv()) {
    std::fprintf(stderr, "init_ibv: %s\n", ec.message().c_str());
    co_return 1;
  }
  if (auto ec = co_await client.connect(endpoint)) {
    std::fprintf(stderr, "connect: %s\n", ec.message().c_str());
    co_return 1;
  }
  auto r = co_await client.call<echo>("hello rdma");
  if (!r) {
    std::fprintf(stderr, "echo: %s\n", r.error().message().c_str());
    co_return 1;
  }
  std::printf("echo(\"hello rdma\") = \"%s\"\n", r->c_str());

  auto pending = co_await client.send_request<add>(3, 4);
  auto t = co_await std::move(pending);
  if (!t) co_return 1;
  std::printf("add(3, 4) = %d (pipelined)\n", *t);

  const std::string big(1 << 20, 'x');  // 1 MiB: four 256 KiB chunks on the wire
  auto b = co_await client.call<echo>(big);
  if (!b || *b != big) co_return 1;
  std::printf("echo(1 MiB) ok\n");

  const auto begin = std::chrono::steady_clock::now();
  std::vector<corvid::async_reply_t<echo>> window;
  int done = 0, failed = 0;
  for (int i = 0; i < calls; ++i) {
    window.push_back(co_await client.send_request<echo>("0123456789abcdef"));
    if (window.size() == 64 || i + 1 == calls) {
      for (auto& p : window) {
        auto reply = co_await std::move(p);
        if (reply) {
          ++done;
        } else if (++failed == 1) {
          std::fprintf(stderr, "echo failed: %s\n", reply.error().message().c_str());
        }
      }
      window.clear();
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const auto st = client.stats();
  std::printf("%d pipelined echo calls in %.3f s: %.0f calls/s, %d failed\n", done, secs,
              done / secs, failed);
  std::printf("rdma sends %llu (%llu inline) for %llu frames\n",
              static_cast<unsigned long long>(st.rdma_sends),
              static_cast<unsigned long long>(st.rdma_inline_sends),
              static_cast<unsigned long long>(st.frames_sent));
  co_return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  std::string endpoint = argc > 1 ? argv[1] : "127.0.0.1:9000";
  int calls = argc > 2 ? std::atoi(argv[2]) : 100000;
  return corvid::sync_wait(run(endpoint, calls));
}
