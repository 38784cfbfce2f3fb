// `corvid-bench pool`: calls/s through one client_pool against the same load on plain
// connections, server and client each on --threads io threads. Rounds interleave the two so
// machine noise hits them alike; medians are reported.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bench_service.hpp"
#include "experiments.hpp"
#include "harness.hpp"
#include "load.hpp"
#include "report.hpp"

namespace corvid::bench {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

harness_config config(const options& o, bool pool, int plain_connections) {
  harness_config hc;
  hc.transport = o.transport;
  hc.tls = o.tls;
  hc.connect = o.connect;
  hc.server_threads = hc.client_threads = o.threads;
  hc.pin = o.pin;
  hc.client_queue = o.client_queue;
  hc.adaptive_poll = o.adaptive_poll;
  hc.busy_poll = o.busy_poll;
  hc.pool = pool ? (o.pool == 0 ? -1 : o.pool) : 0;
  hc.pool_spread_in_flight = o.spread;
  hc.connections = plain_connections;
  return hc;
}

struct pool_run {
  double qps = 0;
  std::size_t connections = 0;
  double cross_per_call = 0;  // calls handed a connection on another client thread, per call
};

pool_run run_pool(const options& o, std::size_t size, int c) {
  harness h(config(o, true, 1));
  client_pool& pool = *h.pool();
  // One call first, as a running process's pool has made: the cold burst of callers on an
  // empty pool is not the steady state under test.
  const std::string payload(size, 'p');
  sync_wait([&]() -> task<bool> {
    auto r = co_await pool.call_with<bench_call>({std::chrono::milliseconds(60000), payload},
                                                 std::uint32_t{16}, false);
    co_return r.has_value();
  }());
  const auto before = pool.stats();
  cell_result r = run_cell({{}, &pool, h.reactors()},
                           {size, o.response_size, o.echo, c, o.warmup, o.duration}, {});
  const auto after = pool.stats();
  const double calls = std::max(1.0, r.qps * r.seconds);
  return {r.qps, after.connections,
          static_cast<double>(after.cross_reactor_calls - before.cross_reactor_calls) / calls};
}

double run_plain(const options& o, std::size_t size, int c, int connections) {
  harness h(config(o, false, connections));
  return run_cell({h.clients()}, {size, o.response_size, o.echo, c, o.warmup, o.duration}, {}).qps;
}

}  // namespace

int run_pool_experiment(const options& o) {
  // The grid's defaults are for payload sweeps: this one's are 128 B and 4 KiB, c = 16..1024.
  const bool default_sizes = o.sizes == options{}.sizes;
  const bool default_conc = o.concurrency == options{}.concurrency;
  const std::vector<std::size_t> sizes =
      default_sizes ? std::vector<std::size_t>{128, 4 << 10} : o.sizes;
  const std::vector<int> concurrency =
      default_conc ? std::vector<int>{16, 64, 256, 1024} : o.concurrency;
  // As many plain connections as the pool's cap (auto: the server's reactors, at least 4),
  // unless --connections says otherwise.
  const int plain = o.connections > 1 ? o.connections
                                      : (o.pool > 0 ? o.pool
                                                    : static_cast<int>(std::clamp<std::size_t>(
                                                          static_cast<std::size_t>(o.threads),
                                                          pool_config::auto_min_connections,
                                                          pool_config::auto_max_connections)));
  table t{{"size", "callers", "plain conns", "plain qps", "pool conns", "pool qps", "pool/plain",
           "cross/call"},
          {}};
  for (std::size_t size : sizes) {
    for (int c : concurrency) {
      std::vector<double> plain_qps, pool_qps;
      pool_run last;
      for (int round = 0; round < o.rounds; ++round) {
        plain_qps.push_back(run_plain(o, size, c, plain));
        last = run_pool(o, size, c);
        pool_qps.push_back(last.qps);
      }
      const double a = median(plain_qps), b = median(pool_qps);
      t.rows.push_back({format_size(size), std::to_string(c), std::to_string(plain), fixed(a, 0),
                        std::to_string(last.connections), fixed(b, 0),
                        fixed(a > 0 ? b / a : 0.0, 2), fixed(last.cross_per_call, 4)});
      std::fprintf(stderr, "%s c=%d: plain %.0f, pool %.0f\n", format_size(size).c_str(), c, a, b);
    }
  }
  std::printf(
      "pool: calls/s through one client_pool (%s) vs %d plain connections, server and client "
      "each on %d io thread(s), %s, median of %d interleaved rounds of %.1f s, %u cores\n\n",
      o.pool > 0 ? ("max " + std::to_string(o.pool)).c_str() : "auto", plain, o.threads,
      o.pin ? "pinned" : "not pinned", o.rounds, o.duration, std::thread::hardware_concurrency());
  t.print_markdown(std::cout);
  return 0;
}

}  // namespace corvid::bench
