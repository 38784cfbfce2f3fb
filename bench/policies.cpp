// corvid-bench hedging / retry-budget: call policies through a load_balancer over a fleet of
// 4 in-process servers (one io thread each), C callers for --duration seconds per row.
// hedging: 1 % of calls stall for 50 ms on the server (a seeded draw per call); rows with
//   hedging off, after a fixed delay (brpc's backup_request_ms) and after the method's p95.
//   Reports P50/P99/P99.9 and the extra load: handler runs per call, minus 1.
// retry-budget: one server refuses every call (server_busy: its one slot for the method is
//   held); rows with 3 attempts per call without a budget and with gRPC's default budget.
//   Reports the success rate and the attempts per call (the first included).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <corvid/corvid.hpp>

#include "experiments.hpp"

namespace corvid::bench {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::atomic<std::uint64_t> handler_runs{0};
std::atomic<bool> fleet_stopping{false};

// x >= 0: every 100th run stalls 50 ms (by the run, not the argument: a second copy of a
// stalled call is as likely to be quick as any call); x < 0: holds its server's slot until
// the fleet stops.
task<int> lookup(request_context& ctx, int x) {
  const auto run = handler_runs.fetch_add(1, std::memory_order_relaxed);
  if (x < 0) {
    while (!fleet_stopping.load()) co_await sleep_for(1ms);
  } else if (run % 100 == 99) {
    co_await ctx.sleep_for(50ms);
  }
  co_return x;
}

struct fleet {
  explicit fleet(bool one_refuses) {
    fleet_stopping = false;
    for (int i = 0; i < 4; ++i) {
      server_config c;
      c.address = "127.0.0.1";
      c.io_threads = 1;
      auto s = std::make_unique<rpc_server>(c);
      s->register_handler<lookup>();
      if (one_refuses && i == 3) s->set_method_limit<lookup>(1);
      if (auto e = s->async_start()) throw std::runtime_error(e.message());
      endpoints.push_back({"127.0.0.1:" + std::to_string(s->port())});
      servers.push_back(std::move(s));
    }
    if (one_refuses) {
      if (auto e = sync_wait(holder.connect(endpoints.back().address)))
        throw std::runtime_error(e.message());
      held.emplace(sync_wait(holder.send_request<lookup>(-1)));
    }
  }
  ~fleet() {
    fleet_stopping = true;
    if (held && *held) {
      sync_wait([](async_reply_t<lookup> r) -> task<void> {
        (void)co_await std::move(r);
      }(std::move(**held)));
    }
  }
  std::vector<std::unique_ptr<rpc_server>> servers;
  std::vector<lb_endpoint> endpoints;
  rpc_client holder;
  std::optional<expected<async_reply_t<lookup>, rpc_error>> held;
};

struct row_result {
  std::vector<double> us;  // latencies of the calls that succeeded
  std::uint64_t calls = 0, ok = 0, runs = 0;
  lb_stats stats;
};

detail::detached caller(load_balancer& lb, int id, steady::time_point end, row_result& out,
                        std::atomic<int>& left) {
  std::vector<double> us;
  std::uint64_t calls = 0, ok = 0;
  for (int i = 0; steady::now() < end; ++i) {
    const auto t0 = steady::now();
    auto r = co_await lb.call<lookup>(id * 1'000'003 + i);
    ++calls;
    if (r) {
      ++ok;
      us.push_back(std::chrono::duration<double, std::micro>(steady::now() - t0).count());
    }
  }
  static std::mutex m;
  {
    std::lock_guard lk(m);
    out.us.insert(out.us.end(), us.begin(), us.end());
    out.calls += calls;
    out.ok += ok;
  }
  left.fetch_sub(1);
}

row_result run_row(const fleet& f, lb_config cfg, int callers, double seconds) {
  cfg.follow_health = false;
  cfg.policy = lb_policy::round_robin;
  auto lb = load_balancer::create(f.endpoints, cfg);
  row_result out;
  // Warm-up: every endpoint connected.
  for (int i = 0; i < 8; ++i) (void)sync_wait(lb->call<lookup>(1));
  handler_runs = 0;
  std::atomic<int> left{callers};
  const auto end = steady::now() + std::chrono::duration_cast<steady::duration>(
                                       std::chrono::duration<double>(seconds));
  for (int c = 0; c < callers; ++c) caller(*lb, c, end, out, left);
  while (left.load() > 0) std::this_thread::sleep_for(10ms);
  out.runs = handler_runs.load();
  out.stats = lb->balancer_stats();
  std::sort(out.us.begin(), out.us.end());
  return out;
}

double quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int run_hedging_experiment(const options& o) {
  const int callers = o.concurrency.empty() ? 16 : o.concurrency.front();
  fleet f(false);
  struct row {
    const char* name;
    std::optional<hedging_policy> hedging;
  };
  const row rows[] = {
      {"off", std::nullopt},
      {"fixed 5 ms", hedging_policy{.max_copies = 2, .delay = 5ms}},
      {"fixed 20 ms", hedging_policy{.max_copies = 2, .delay = 20ms}},
      {"p95 (at least 1 ms)",
       hedging_policy{.max_copies = 2, .delay = 1ms, .delay_quantile = 0.95}},
  };
  std::printf("hedging: 4 servers, 1 %% of calls stall 50 ms, %d callers, %.1f s per row\n",
              callers, o.duration);
  std::printf("%-22s %10s %9s %9s %9s %9s %8s %8s\n", "hedging", "calls/s", "P50 us", "P99 us",
              "P99.9 us", "failed", "hedges", "load +%");
  for (const auto& r : rows) {
    lb_config cfg;
    if (r.hedging) cfg.methods.set<&lookup>({.idempotent = true, .hedging = r.hedging});
    const auto res = run_row(f, cfg, callers, o.duration);
    const double extra =
        res.calls == 0 ? 0 : 100.0 * (static_cast<double>(res.runs) / res.calls - 1.0);
    std::printf("%-22s %10.0f %9.0f %9.0f %9.0f %9llu %8llu %8.1f\n", r.name,
                static_cast<double>(res.calls) / o.duration, quantile(res.us, 0.5),
                quantile(res.us, 0.99), quantile(res.us, 0.999),
                static_cast<unsigned long long>(res.calls - res.ok),
                static_cast<unsigned long long>(res.stats.hedges), extra);
  }
  return 0;
}

int run_retry_budget_experiment(const options& o) {
  const int callers = o.concurrency.empty() ? 16 : o.concurrency.front();
  fleet f(true);
  std::printf("retry budget: 4 servers, one refuses every call, 3 attempts, %d callers, %.1f s\n",
              callers, o.duration);
  std::printf("%-26s %10s %10s %14s %10s %10s\n", "budget", "calls/s", "success %", "attempts/call",
              "retries", "throttled");
  for (const double tokens : {0.0, 10.0}) {
    lb_config cfg;
    cfg.retry.max_attempts = 3;
    cfg.retry.initial_backoff = 1ms;
    cfg.retry.max_backoff = 5ms;
    cfg.retry.budget.max_tokens = tokens;
    cfg.retry.idempotent<&lookup>();
    // The refusing server is never ejected (a refusal is an answer), so every fourth call
    // meets it first.
    const auto res = run_row(f, cfg, callers, o.duration);
    std::printf("%-26s %10.0f %10.2f %14.3f %10llu %10llu\n",
                tokens == 0 ? "none" : "10 tokens, 0.1 per success",
                static_cast<double>(res.calls) / o.duration,
                res.calls == 0 ? 0 : 100.0 * static_cast<double>(res.ok) / res.calls,
                res.calls == 0 ? 0 : static_cast<double>(res.calls + res.stats.retries) / res.calls,
                static_cast<unsigned long long>(res.stats.retries),
                static_cast<unsigned long long>(res.stats.retries_throttled));
  }
  return 0;
}

}  // namespace corvid::bench
