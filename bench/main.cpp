// corvid-bench: the benchmark grid of seed 000 and the experiments of seeds 001-003.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <pthread.h>
#include <unistd.h>

#include "experiments.hpp"
#include "harness.hpp"
#include "idle.hpp"
#include "load.hpp"
#include "options.hpp"
#include "report.hpp"

namespace corvid::bench {
namespace {

void print_machine(const options& o) {
  std::printf(
      "corvid-bench %s: transport %s, %d io thread(s) per side, %d connection(s), "
      "%.1f s per cell (+%.1f s warm-up), reply %s%s%s, %u cores\n\n",
      o.command.c_str(), (o.transport + (o.tls ? "+tls" : "")).c_str(), o.threads, o.connections,
      o.duration, o.warmup, o.echo ? "= payload (echo)" : format_size(o.response_size).c_str(),
      o.pin ? ", reactors pinned" : "",
      o.busy_poll.count() > 0
          ? (", busy-poll " + std::to_string(o.busy_poll.count()) + " us").c_str()
          : "",
      std::thread::hardware_concurrency());
}

int write_outputs(const options& o, const std::vector<cell_result>& cells) {
  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    write_csv(f, cells);
  }
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    write_json(f, cells);
  }
  if (!o.plot.empty()) {
    std::string error;
    if (!write_plot(o.plot, cells, error)) {
      std::fprintf(stderr, "plot: %s\n", error.c_str());
      return 1;
    }
    std::printf("plot written to %s\n", o.plot.c_str());
  }
  return 0;
}

int run_grid(const options& o) {
  harness_config hc;
  hc.transport = o.transport;
  hc.tls = o.tls;
  hc.rdma = rdma_config(o);
  hc.connect = o.connect;
  hc.server_threads = hc.client_threads = o.threads;
  hc.connections = o.connections;
  hc.pool = o.pool;
  hc.balancer = o.balancer;
  hc.pool_spread_in_flight = o.spread;
  hc.pin = o.pin;
  hc.client_queue = o.client_queue;
  hc.busy_poll = o.busy_poll;
  hc.adaptive_poll = o.adaptive_poll;
  hc.client_metrics = o.client_metrics;
  harness h(hc);
  print_machine(o);
  std::vector<cell_result> cells;
  const bool tty = ::isatty(2);
  const std::size_t total = o.sizes.size() * o.concurrency.size();
  std::uint64_t errors = 0;
  for (std::size_t size : o.sizes) {
    for (int c : o.concurrency) {
      cell_params p{size, o.response_size, o.echo, c, o.warmup, o.duration};
      const std::string label = format_size(size) + " c=" + std::to_string(c);
      const std::size_t index = cells.size() + 1;
      auto progress = [&](double qps) {
        if (tty)
          std::fprintf(stderr, "\r[%zu/%zu] %-12s %12.0f qps   ", index, total, label.c_str(), qps);
      };
      if (tty)
        std::fprintf(stderr, "\r[%zu/%zu] %-12s warming up...      ", index, total, label.c_str());
      std::string first_error;
      cell_result r =
          run_cell({h.clients(), h.pool(), h.reactors(), h.balancer()}, p, progress, &first_error);
      r.transport = o.transport + (o.tls ? "+tls" : "");
      if (!first_error.empty())
        std::fprintf(stderr, "\n%s: %s\n", label.c_str(), first_error.c_str());
      errors += r.errors;
      cells.push_back(r);
    }
  }
  if (tty) std::fprintf(stderr, "\r%60s\r", "");
  print_grid_table(std::cout, cells);
  std::cout.flush();
  const int rc = write_outputs(o, cells);
  return errors == 0 ? rc : 1;
}

int run_server(const options& o) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::string error;
  const ibv_config rdma = rdma_config(o);
  int threads = o.threads;
  std::chrono::microseconds adaptive_poll = o.adaptive_poll;
  if (o.library_defaults) {
    const server_config defaults;
    if (!o.threads_given) threads = static_cast<int>(defaults.io_threads);
    if (!o.adaptive_poll_given) adaptive_poll = defaults.adaptive_poll;
  }
  auto server = start_bench_server(o.listen.empty() ? "0.0.0.0:9000" : o.listen, threads, o.pin,
                                   true, error, o.transport == "rdma" ? &rdma : nullptr, nullptr,
                                   o.metrics, o.busy_poll, adaptive_poll);
  if (!server) {
    std::fprintf(stderr, "corvid-bench server: %s\n", error.c_str());
    return 1;
  }
  std::printf("listening on %s (port %u), %d io thread(s), adaptive poll %lld us\n",
              o.listen.c_str(), server->port(), threads,
              static_cast<long long>(adaptive_poll.count()));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server->stop();
  return 0;
}

}  // namespace
}  // namespace corvid::bench

int main(int argc, char** argv) {
  using namespace corvid::bench;
  const options o = parse_options(argc, argv);
  try {
    if (o.command == "grid") return run_grid(o);
    if (o.command == "client") {
      if (o.connect.empty()) {
        std::fprintf(stderr, "corvid-bench client: --connect ADDR is required\n");
        return 2;
      }
      return run_grid(o);
    }
    if (o.command == "server") return run_server(o);
    if (o.command == "pipeline") return run_pipeline_experiment(o);
    if (o.command == "coalesce") return run_coalesce_experiment(o);
    if (o.command == "reactors") return run_reactors_experiment(o);
    if (o.command == "idle") return run_idle_experiment(o);
    if (o.command == "stream") return run_stream_experiment(o);
    if (o.command == "latency") return run_latency_experiment(o);
    if (o.command == "discovery") return run_discovery_experiment(o);
    if (o.command == "discovery-server") return run_discovery_server(o);
    if (o.command == "blocking-fairness") return run_blocking_fairness(o);
    if (o.command == "pool") return run_pool_experiment(o);
    if (o.command == "hedging") return run_hedging_experiment(o);
    if (o.command == "retry-budget") return run_retry_budget_experiment(o);
    if (o.command == "compression") return run_compression_experiment(o);
    if (o.command == "auth") return run_auth_experiment(o);
    if (o.command == "auth-server") return run_auth_server(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corvid-bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "corvid-bench: unknown command '%s' (see --help)\n", o.command.c_str());
  return 2;
}
