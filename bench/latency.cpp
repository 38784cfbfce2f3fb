// `corvid-bench latency`: the c=1 round trip with busy-poll off and on, beside sockperf's TCP
// ping-pong in its blocking and its spinning (non-blocking sockets, both sides) modes, in one
// run. Rounds interleave the four so machine noise hits them alike; medians are reported.
// The process's CPU use shows what spinning costs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <asio/ip/tcp.hpp>

#include "experiments.hpp"
#include "harness.hpp"
#include "load.hpp"
#include "report.hpp"
#include <sys/resource.h>

namespace corvid::bench {
namespace {

struct sample {
  double p50_us = 0, p99_us = 0;
  double cores = -1;  // CPU time / wall time of this process; negative = not measured
};

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6;
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

std::uint16_t free_port() {
  asio::io_context ctx;
  asio::ip::tcp::acceptor a(ctx, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// One sockperf ping-pong (server and client pinned like corvid's reactors). `spin`: both
// sides on non-blocking sockets, which makes them spin on recv instead of sleeping.
std::optional<sample> run_sockperf(std::size_t size, double seconds, bool spin, bool pin) {
  const std::string port = std::to_string(free_port());
  const std::string mode = spin ? " --nonblocked" : "";
  const std::string server_pin = pin ? "taskset -c 0 " : "";
  const std::string client_pin = pin ? "taskset -c " + std::to_string(cores() - 1) + " " : "";
  char hex_port[8];
  std::snprintf(hex_port, sizeof hex_port, "%04X", static_cast<unsigned>(std::stoi(port)));
  // Waits for the LISTEN socket in /proc/net/tcp (a probe connection would be a client).
  const std::string script =
      server_pin + "sockperf server --tcp -i 127.0.0.1 -p " + port + mode +
      " >/dev/null 2>&1 & s=$!; for i in $(seq 100); do grep -q '0100007F:" + hex_port +
      " 00000000:0000 0A' /proc/net/tcp && break; sleep 0.05; done; " + client_pin +
      "sockperf ping-pong --tcp -i 127.0.0.1 -p " + port + " -m " + std::to_string(size) + " -t " +
      std::to_string(std::max(1, static_cast<int>(seconds + 0.5))) + " --full-rtt" + mode +
      " 2>&1; kill $s; wait $s 2>/dev/null";
  FILE* f = ::popen(script.c_str(), "r");
  if (f == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  ::pclose(f);
  auto percentile = [&](const char* which) -> std::optional<double> {
    const auto at = out.find(std::string("percentile ") + which + " =");
    if (at == std::string::npos) return std::nullopt;
    return std::strtod(out.c_str() + out.find('=', at) + 1, nullptr);
  };
  auto p50 = percentile("50.000");
  auto p99 = percentile("99.000");
  if (!p50 || !p99) {
    std::fprintf(stderr, "latency: could not read sockperf's output:\n%s\n", out.c_str());
    return std::nullopt;
  }
  return sample{*p50, *p99, -1};
}

std::optional<sample> run_corvid(const options& o, std::size_t size,
                                 std::chrono::microseconds busy_poll,
                                 std::chrono::microseconds adaptive_poll) {
  harness_config hc;
  hc.transport = o.transport;
  hc.rdma = rdma_config(o);
  hc.pin = o.pin;
  hc.busy_poll = busy_poll;
  hc.adaptive_poll = adaptive_poll;
  harness h(hc);
  const cell_params p{size, size, true, 1, o.warmup, o.duration};
  // CPU over the measured window only would need hooks into run_cell; over the whole cell
  // (warm-up included) it is the same load.
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  const cell_result r = run_cell({h.clients(), h.pool()}, p, {}, &error);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  if (r.errors > 0) {
    std::fprintf(stderr, "latency: %s\n", error.c_str());
    return std::nullopt;
  }
  return sample{r.p50_us, r.p99_us, cpu / wall};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int run_latency_experiment(const options& o) {
  const std::size_t size = o.sizes.front();
  const auto budget = o.busy_poll.count() > 0 ? o.busy_poll : std::chrono::microseconds(1000);
  const auto adaptive =
      o.adaptive_poll.count() > 0 ? o.adaptive_poll : io_pool::default_adaptive_poll;
  struct mode {
    std::string name;
    std::vector<sample> samples;
  };
  std::vector<mode> modes{
      {"sockperf ping-pong, blocking", {}},
      {"sockperf ping-pong, spinning (--nonblocked)", {}},
      {"corvid, busy_poll off, adaptive_poll off", {}},
      {"corvid, busy_poll " + std::to_string(budget.count()) + " us", {}},
      {"corvid, adaptive_poll " + std::to_string(adaptive.count()) + " us (the default)", {}}};
  std::printf(
      "corvid-bench latency: transport %s, %s echoed, c=1, %.1f s per run, %d round(s), "
      "%s, %d cores\n\n",
      o.transport.c_str(), format_size(size).c_str(), o.duration, o.rounds,
      o.pin ? "server on CPU 0, client on the last CPU" : "not pinned", cores());
  for (int round = 0; round < o.rounds; ++round) {
    std::fprintf(stderr, "latency: round %d/%d\n", round + 1, o.rounds);
    if (o.sockperf) {
      if (auto s = run_sockperf(size, o.duration, false, o.pin)) modes[0].samples.push_back(*s);
      if (auto s = run_sockperf(size, o.duration, true, o.pin)) modes[1].samples.push_back(*s);
    }
    const std::chrono::microseconds none{0};
    auto off = run_corvid(o, size, none, none);
    auto on = run_corvid(o, size, budget, none);
    auto learned = run_corvid(o, size, none, adaptive);
    if (!off || !on || !learned) return 1;
    modes[2].samples.push_back(*off);
    modes[3].samples.push_back(*on);
    modes[4].samples.push_back(*learned);
  }
  table t{{"round trip, c=1", "P50 (us)", "P99 (us)", "CPU (cores, corvid process)"}, {}};
  for (const mode& m : modes) {
    if (m.samples.empty()) continue;
    std::vector<double> p50, p99, cpu;
    for (const sample& s : m.samples) {
      p50.push_back(s.p50_us);
      p99.push_back(s.p99_us);
      cpu.push_back(s.cores);
    }
    const double c = median(cpu);
    t.rows.push_back({m.name, fixed(median(p50), 1), fixed(median(p99), 1),
                      c < 0 ? std::string("-") : fixed(c, 2)});
  }
  t.print_markdown(std::cout);
  auto p50_of = [](const mode& m) {
    std::vector<double> v;
    for (const sample& s : m.samples) v.push_back(s.p50_us);
    return median(v);
  };
  if (!modes[0].samples.empty() && !modes[1].samples.empty()) {
    for (const mode* m : {&modes[3], &modes[4]}) {
      const double on = p50_of(*m);
      std::printf(
          "\n%s: P50 / sockperf blocking P50 = %.2fx (target <= 0.5x); "
          "/ sockperf spinning P50 = %.2fx (target <= 1.2x)",
          m->name.c_str(), on / p50_of(modes[0]), on / p50_of(modes[1]));
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace corvid::bench
