#include "experiments.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include "bench_service.hpp"
#include "harness.hpp"
#include "load.hpp"
#include "report.hpp"

namespace corvid::bench {
namespace {

using clock = std::chrono::steady_clock;

double seconds_since(clock::time_point t0) {
  return std::chrono::duration<double>(clock::now() - t0).count();
}

harness_config base_config(const options& o) {
  harness_config hc;
  hc.transport = o.transport;
  hc.tls = o.tls;
  hc.rdma = rdma_config(o);
  hc.connect = o.connect;
  hc.pin = o.pin;
  hc.client_queue = o.client_queue;
  return hc;
}

// Seed 001: the same calls made synchronously, pipelined, and by many callers at once.
task<int> pipelined(rpc_client& c, int n, std::string_view payload) {
  std::vector<async_reply<detail::call_state<void, true>>> pending;
  pending.reserve(static_cast<std::size_t>(n));
  const call_options opts{std::chrono::milliseconds(60000), payload};
  for (int i = 0; i < n; ++i) {
    pending.push_back(co_await c.send_request_with<bench_call>(opts, std::uint32_t{16}, false));
  }
  int ok = 0;
  for (auto& p : pending) ok += (co_await std::move(p)).has_value() ? 1 : 0;
  co_return ok;
}

task<int> sequential(rpc_client& c, int n, std::string_view payload) {
  const call_options opts{std::chrono::milliseconds(60000), payload};
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    ok += (co_await c.call_with<bench_call>(opts, std::uint32_t{16}, false)).has_value() ? 1 : 0;
  }
  co_return ok;
}

}  // namespace

int run_pipeline_experiment(const options& o) {
  harness h(base_config(o));
  rpc_client& c = *h.clients()[0];
  const std::string payload(128, 'p');
  const int n = o.calls;
  table t{{"mode", "calls", "ok", "seconds", "qps", "vs synchronous"}, {}};
  double sync_qps = 0;
  auto add_row = [&](const std::string& mode, int ok, double secs) {
    const double qps = n / secs;
    if (sync_qps == 0) sync_qps = qps;
    t.rows.push_back({mode, std::to_string(n), std::to_string(ok), fixed(secs, 3), fixed(qps, 0),
                      fixed(qps / sync_qps, 1) + "x"});
  };
  sync_wait(sequential(c, 1000, payload));  // warm-up
  // A classic blocking client: the thread waits for each reply before the next call.
  auto t0 = clock::now();
  int ok = 0;
  for (int i = 0; i < n; ++i) ok += sync_wait(sequential(c, 1, payload));
  add_row("synchronous (blocking thread, one call at a time)", ok, seconds_since(t0));
  t0 = clock::now();
  ok = sync_wait(sequential(c, n, payload));
  add_row("sequential awaits in one coroutine", ok, seconds_since(t0));
  t0 = clock::now();
  ok = sync_wait(pipelined(c, n, payload));
  add_row("pipelined from one coroutine (send_request all, then await)", ok, seconds_since(t0));
  for (int callers : {16, 64, 256}) {
    t0 = clock::now();
    ok = sync_wait([&]() -> task<int> {
      std::vector<task<int>> tasks;
      // Each caller runs sequential calls; all of them share the one connection.
      std::vector<std::unique_ptr<std::atomic<int>>> results;
      std::atomic<int> total{0}, left{callers};
      struct waiter {
        std::mutex m;
        std::condition_variable cv;
      } w;
      for (int k = 0; k < callers; ++k) {
        [](rpc_client& cl, int calls, std::string_view pl, std::atomic<int>& sum,
           std::atomic<int>& remaining, waiter& wt) -> detail::detached {
          sum += co_await sequential(cl, calls, pl);
          if (--remaining == 0) {
            std::lock_guard lk(wt.m);
            wt.cv.notify_all();
          }
        }(c, n / callers + (k < n % callers ? 1 : 0), payload, total, left, w);
      }
      std::unique_lock lk(w.m);
      w.cv.wait(lk, [&] { return left.load() == 0; });
      co_return total.load();
    }());
    add_row(std::to_string(callers) + " concurrent callers on one connection", ok,
            seconds_since(t0));
  }
  std::printf("pipeline (seed 001): %d calls of 128 B per mode, one connection\n\n", n);
  t.print_markdown(std::cout);
  return 0;
}

int run_coalesce_experiment(const options& o) {
  table t{{"coalescing", "concurrency", "qps", "P99 (us)", "RPCs/write client", "RPCs/write server",
           "packets/RPC"},
          {}};
  for (bool on : {true, false}) {
    harness_config hc = base_config(o);
    hc.server_coalesce = hc.client_coalesce = on;
    harness h(hc);
    for (int c : o.concurrency) {
      const long long seg0 = tcp_segments_sent();
      cell_result r =
          run_cell({h.clients()}, {128, o.response_size, false, c, o.warmup, o.duration}, {});
      const long long seg1 = tcp_segments_sent();
      // Segments over warm-up + measurement, per call over the same span (estimated from qps).
      const double calls = r.qps * (o.warmup + o.duration);
      const std::string packets = (seg0 < 0 || o.transport != "tcp")
                                      ? "n/a"
                                      : fixed(static_cast<double>(seg1 - seg0) / calls, 2);
      t.rows.push_back({on ? "on" : "off", std::to_string(c), fixed(r.qps, 0), fixed(r.p99_us, 0),
                        fixed(r.client_rpcs_per_write, 1), fixed(r.server_rpcs_per_write, 1),
                        packets});
    }
  }
  std::printf("coalesce (seed 002): 128 B calls, one connection, %s\n\n", o.transport.c_str());
  t.print_markdown(std::cout);
  std::printf(
      "\npackets/RPC: TCP segments sent on this host (/proc/net/snmp OutSegs) per call, "
      "both directions, ACKs included.\n");
  return 0;
}

namespace {

// One client process, one client_pool, against a server with 2 io threads (or --threads if
// more): how the pool's calls spread over the server's reactors, before (the pool's old rule:
// another connection only at 128 calls in flight on one, max 4) and after (pool_config's
// default auto max_connections, spreading at --spread calls in flight, default 2: one
// connection per server reactor once the least-loaded has that many in flight).
// `connections` is the pool's count at the end of the cell.
void run_pool_reactors_rows(const options& o) {
  const int server_threads = std::max(2, o.threads);
  std::vector<std::string> head{"pool rule", "callers",  "connections",
                                "qps",       "P50 (us)", "P99 (us)"};
  for (int i = 0; i < server_threads; ++i) head.push_back("reactor " + std::to_string(i));
  table t{head, {}};
  for (int c : o.concurrency) {
    for (bool after : {false, true}) {
      harness_config hc = base_config(o);
      hc.server_threads = server_threads;
      hc.pool = after ? -1 : 4;  // after: auto; before: the old default of 4
      hc.pool_spread_in_flight = after ? o.spread : 0;
      hc.pin = false;  // as above: the server's reactors and the client's share the cores
      harness h(hc);
      // One call first, as a running process's pool has made: a cold burst of callers on an
      // empty pool opens up to max_connections at once (before and after alike), which is not
      // the steady state under test.
      const std::string payload(128, 'p');
      const bool primed = sync_wait([&]() -> task<bool> {
        auto r = co_await h.pool()->call_with<bench_call>(
            {std::chrono::milliseconds(60000), payload}, std::uint32_t{16}, false);
        co_return r.has_value();
      }());
      if (!primed) std::fprintf(stderr, "reactors: the priming call failed\n");
      reset_reactor_calls();
      cell_result r =
          run_cell({{}, h.pool()}, {128, o.response_size, false, c, o.warmup, o.duration}, {});
      const auto calls = reactor_calls(static_cast<std::size_t>(server_threads));
      std::uint64_t total = 0;
      for (auto n : calls) total += n;
      std::vector<std::string> row{after ? "after: auto, spread at " + std::to_string(o.spread)
                                         : std::string("before: max 4, new only at 128 in flight"),
                                   std::to_string(c),
                                   std::to_string(h.pool()->stats().connections),
                                   fixed(r.qps, 0),
                                   fixed(r.p50_us, 0),
                                   fixed(r.p99_us, 0)};
      for (auto n : calls) {
        row.push_back(total == 0
                          ? "0 %"
                          : fixed(100.0 * static_cast<double>(n) / static_cast<double>(total), 0) +
                                " %");
      }
      t.rows.push_back(std::move(row));
    }
  }
  std::printf(
      "\nreactors, one client process: 128 B calls from `callers` coroutines through one "
      "client_pool (client on 1 io thread) to a server with %d io threads, %u cores; "
      "reactor i = share of the calls that server reactor ran (warm-up included)\n\n",
      server_threads, std::thread::hardware_concurrency());
  t.print_markdown(std::cout);
}

}  // namespace

// Seed 003: calls/s should grow with the server's reactors while the client keeps up. The
// client here scales with the server (T io threads of its own, 8 connections and 128 callers
// per thread), and each side is pinned to CPUs of its own (the server's from CPU 0 up, the
// client's from the last down) while 2 T fit; past that they share CPUs, and the rows say so.
int run_reactors_experiment(const options& o) {
  if (o.pool != 0) {  // --pool: the one-client-process rows alone
    run_pool_reactors_rows(o);
    return 0;
  }
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int half = std::max(1, cpus / 2);
  table t{{"server reactors (T)", "client", "connections", "callers", "calls/s",
           "per server reactor", "efficiency vs its T=1", "P50 (us)", "P99 (us)", "CPUs"},
          {}};
  double base[2] = {0, 0};  // calls/s per reactor at T = 1: plain connections, the pool
  for (int threads = 1; threads <= std::max(half, 2); threads *= 2) {
    const bool own_cpus = 2 * threads <= cpus;
    for (bool pooled : {false, true}) {
      harness_config hc = base_config(o);
      hc.server_threads = hc.client_threads = threads;
      hc.connections = 8 * threads;  // the hand-chosen count
      hc.pool = pooled ? -1 : 0;     // the default client_pool (auto) beside it
      hc.pin = own_cpus && o.pin;
      harness h(hc);
      const int callers = 128 * threads;
      const cell_result r =
          run_cell({h.clients(), h.pool(), h.reactors()},
                   {128, o.response_size, false, callers, o.warmup, o.duration}, {});
      const double per = r.qps / threads;
      double& b = base[pooled ? 1 : 0];
      if (threads == 1) b = per;
      t.rows.push_back({std::to_string(threads), pooled ? "client_pool (auto)" : "plain",
                        std::to_string(r.connections), std::to_string(callers), fixed(r.qps, 0),
                        fixed(per, 0), b > 0 ? fixed(100.0 * per / b, 0) + " %" : "-",
                        fixed(r.p50_us, 0), fixed(r.p99_us, 0),
                        own_cpus ? "own" : "shared (cannot show scaling)"});
    }
  }
  std::printf(
      "reactors (seed 003): 128 B calls; server and client on T io threads each, 8 connections "
      "and 128 callers per client thread; %d CPUs\n\n",
      cpus);
  t.print_markdown(std::cout);
  if (half < 2) {
    std::printf(
        "\nThis machine has %d CPUs: past T = %d the server and the client share CPUs, so the "
        "rows cannot show how the server scales. bench/reactors-scaling runs the same "
        "experiment as two processes on CPU sets of their own, on a host with more cores.\n",
        cpus, half);
  }
  if (o.connect.empty()) run_pool_reactors_rows(o);
  return 0;
}

}  // namespace corvid::bench
