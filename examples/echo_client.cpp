// The seed's client: `echo_client <host:port> [calls]` makes the example's calls, then
// measures pipelined echo calls per second on one connection.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <corvid/client.hpp>

#include "echo_api.hpp"

using namespace std::chrono_literals;

corvid::task<int> run(std::string endpoint, int calls) {
  corvid::rpc_client client;
  if (auto ec = co_await client.connect(endpoint)) {
    std::fprintf(stderr, "connect: %s\n", ec.message().c_str());
    co_return 1;
  }
  auto r = co_await client.call<echo>("hello");
  if (!r) {
    std::fprintf(stderr, "echo: %s\n", r.error().message().c_str());
    co_return 1;
  }
  std::printf("echo(\"hello\") = \"%s\"\n", r->c_str());

  auto s = co_await client.call_for<add>(100ms, 1, 2);
  if (!s) co_return 1;
  std::printf("add(1, 2) = %d\n", *s);

  auto pending = co_await client.send_request<add>(3, 4);  // queued; the reply comes later
  auto t = co_await std::move(pending);
  if (!t) co_return 1;
  std::printf("add(3, 4) = %d (pipelined)\n", *t);

  // Built before the co_await: g++ 12 rejects a braced temporary holding a string literal
  // inside a co_await expression ("array used as initializer", a compiler bug).
  const point start{1, 2.5, "p", {7}};
  auto m = co_await client.call<move>(start, 10);
  if (!m) co_return 1;
  std::printf("move({1, 2.5, \"p\", [7]}, 10) = {%d, %.1f, \"%s\", %zu values}\n", m->x, m->y,
              m->tag.c_str(), m->v.size());

  // Throughput: keep 64 echo calls in flight on the one connection.
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
  std::printf("%d pipelined echo calls in %.3f s: %.0f calls/s, %d failed\n", done, secs,
              done / secs, failed);
  co_return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  std::string endpoint = argc > 1 ? argv[1] : "127.0.0.1:9000";
  int calls = argc > 2 ? std::atoi(argv[2]) : 200000;
  return corvid::sync_wait(run(endpoint, calls));
}
