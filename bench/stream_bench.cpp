// corvid-bench stream: items of one stream against unary calls of the same size, in one run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_service.hpp"
#include "experiments.hpp"
#include "harness.hpp"
#include "load.hpp"
#include "report.hpp"

namespace corvid::bench {
namespace {

using clock = std::chrono::steady_clock;

// Reads `streams` streams of bench_items at once until `seconds` have passed (each stream
// asks for more items than that can carry, then is cancelled). Returns items received.
task<std::uint64_t> drain(rpc_client& c, std::uint32_t size, int streams, double seconds) {
  std::vector<stream_reader<std::string>> readers;
  for (int i = 0; i < streams; ++i) {
    auto s = co_await c.stream<bench_items>(size, std::uint64_t{1} << 40);
    if (!s) co_return 0;
    readers.push_back(std::move(*s));
  }
  const auto end = clock::now() + std::chrono::duration<double>(seconds);
  std::uint64_t items = 0;
  // Round-robin over the streams, a batch of items from each in turn.
  while (clock::now() < end) {
    for (auto& r : readers) {
      for (int k = 0; k < 16; ++k) {
        if (!co_await r.next()) co_return items;
        ++items;
      }
    }
  }
  for (auto& r : readers) r.cancel();
  co_return items;
}

}  // namespace

int run_stream_experiment(const options& o) {
  harness_config hc;
  hc.transport = o.transport;
  hc.tls = o.tls;
  hc.rdma = rdma_config(o);
  hc.pin = o.pin;
  if (o.stream_window != 0) hc.stream_window = o.stream_window;
  if (o.max_stream_window != 0) hc.max_stream_window = o.max_stream_window;
  harness h(hc);
  rpc_client& c = *h.clients()[0];
  table t{{"item size", "streams / callers", "stream items/s", "stream Gb/s", "unary qps",
           "unary Gb/s", "stream vs unary", "best unary Gb/s (c)", "stream vs best"},
          {}};
  const auto gbps = [](double per_second, std::size_t size) {
    return per_second * static_cast<double>(size) * 8 / 1e9;
  };
  for (std::size_t size : std::vector<std::size_t>{128, 4096, 1u << 20}) {
    // The unary row of the grid at this size (concurrency 1..256), in the same run: the
    // streams are compared with the same concurrency and with the row's best cell.
    std::vector<std::pair<int, double>> unary;  // concurrency, qps
    for (int callers : {1, 4, 16, 64, 256}) {
      unary.emplace_back(
          callers,
          run_cell({h.clients()}, {16, size, false, callers, o.warmup, o.duration}, {}).qps);
    }
    const auto best = *std::max_element(unary.begin(), unary.end(),
                                        [](auto& x, auto& y) { return x.second < y.second; });
    for (int n : {1, 64}) {
      const auto size32 = static_cast<std::uint32_t>(size);
      sync_wait(drain(c, size32, n, o.warmup));
      const auto t0 = clock::now();
      const std::uint64_t items = sync_wait(drain(c, size32, n, o.duration));
      const double secs = std::chrono::duration<double>(clock::now() - t0).count();
      const double ips = static_cast<double>(items) / secs;
      const double same =
          std::find_if(unary.begin(), unary.end(), [n](auto& u) { return u.first == n; })->second;
      t.rows.push_back({format_size(size), std::to_string(n), fixed(ips, 0),
                        fixed(gbps(ips, size), 2), fixed(same, 0), fixed(gbps(same, size), 2),
                        fixed(ips / same, 2) + "x",
                        fixed(gbps(best.second, size), 2) + " (" + std::to_string(best.first) + ")",
                        fixed(ips / best.second, 2) + "x"});
    }
  }
  std::printf(
      "stream: server-streamed items vs unary calls returning the same bytes, one connection, "
      "%s%s\n\n",
      o.transport.c_str(), o.tls ? "+tls" : "");
  t.print_markdown(std::cout);
  return 0;
}

}  // namespace corvid::bench
