// corvid-bench blocking-fairness: how long a newcomer's blocking call that returns at once
// waits for a worker thread, alone and while two other connections keep the worker queue
// full. The server has 2 worker threads; each hostile connection pipelines 1024 calls of a
// blocking handler that sleeps 500 ms (a connection pauses at its share of the queue, 128
// calls; the rest wait in its socket). Once the queue holds them, --rounds newcomers (default
// 3) each connect and make one call with a 5 s deadline.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <corvid/corvid.hpp>

#include "experiments.hpp"
#include "report.hpp"

namespace corvid::bench {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr std::size_t workers = 2;
constexpr int hostile_connections = 2;
constexpr int hostile_calls = 1024;  // per connection
constexpr auto hog_time = 500ms;
constexpr auto newcomer_deadline = 5s;

std::atomic<int> hogs_run{0};
void hog() {
  std::this_thread::sleep_for(hog_time);
  ++hogs_run;
}
int quick() { return 1; }

task<rpc_error> connect_to(rpc_client& c, std::string ep) { co_return co_await c.connect(ep); }

std::unique_ptr<rpc_client> connected(const rpc_server& s) {
  auto c = std::make_unique<rpc_client>();
  if (auto ec = sync_wait(connect_to(*c, "127.0.0.1:" + std::to_string(s.port())))) {
    throw std::runtime_error("connect: " + ec.message());
  }
  return c;
}

// The worker queue's depth, from the server's metrics.
std::size_t queue_depth(const rpc_server& s) {
  const std::string text = s.metrics_text();
  const std::string key = "\ncorvid_server_worker_queue_depth ";
  const auto at = text.find(key);
  return at == std::string::npos ? 0 : std::stoul(text.substr(at + key.size()));
}

struct newcomer_result {
  double ms = 0;
  bool ok = false;
  std::string error;
  int hogs = 0;  // hostile calls that ran meanwhile
};

// A fresh connection's one quick call; its connect is not timed.
newcomer_result newcomer(const rpc_server& s) {
  auto c = connected(s);
  const int hogs_before = hogs_run.load();
  const auto t0 = steady::now();
  auto r = sync_wait([&]() -> task<expected<int, rpc_error>> {
    co_return co_await c->call_for<quick>(newcomer_deadline);
  }());
  newcomer_result out;
  out.ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
  out.hogs = hogs_run.load() - hogs_before;
  out.ok = r.has_value();
  if (!r) out.error = r.error().message();
  return out;
}

task<void> pipeline_hogs(rpc_client& c, std::vector<async_reply_with_t<hog>>& pending) {
  const call_options opts{std::chrono::milliseconds(600'000), {}};
  for (int i = 0; i < hostile_calls; ++i)
    pending.push_back(co_await c.send_request_with<hog>(opts));
}

void add_rows(table& t, const std::string& phase, const std::vector<newcomer_result>& results) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    t.rows.push_back({phase, std::to_string(i + 1), fixed(r.ms, 1),
                      r.ok ? "ok" : "failed: " + r.error.substr(0, 60), std::to_string(r.hogs)});
  }
}

}  // namespace

int run_blocking_fairness(const options& o) {
  server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 1;
  cfg.worker_threads = workers;
  cfg.stop_timeout = 2s;
  rpc_server s(cfg);
  s.register_blocking_handler<hog, quick>();
  if (auto ec = s.async_start()) throw std::runtime_error(ec.message());
  const int rounds = std::max(o.rounds, 1);
  std::printf(
      "corvid-bench blocking-fairness: %zu worker threads, %d hostile connections x %d "
      "pipelined calls of a %lld ms blocking handler; newcomers' one quick blocking call (%lld s "
      "deadline), %u cores\n\n",
      workers, hostile_connections, hostile_calls, static_cast<long long>(hog_time.count()),
      static_cast<long long>(newcomer_deadline.count()), std::thread::hardware_concurrency());

  table t{{"phase", "newcomer", "wait ms", "result", "hostile calls run meanwhile"}, {}};
  std::vector<newcomer_result> alone;
  for (int i = 0; i < rounds; ++i) alone.push_back(newcomer(s));
  add_rows(t, "alone", alone);

  std::vector<std::unique_ptr<rpc_client>> hostile;
  std::vector<std::vector<async_reply_with_t<hog>>> pending(hostile_connections);
  for (int i = 0; i < hostile_connections; ++i) {
    hostile.push_back(connected(s));
    pending[static_cast<std::size_t>(i)].reserve(hostile_calls);
    sync_wait(pipeline_hogs(*hostile.back(), pending[static_cast<std::size_t>(i)]));
  }
  // Both connections at their share of the queue (a connection's share: an eighth of it).
  const std::size_t full = hostile_connections * (cfg.worker_queue_length / 8) - workers;
  const auto until = steady::now() + 10s;
  while (queue_depth(s) < full && steady::now() < until) std::this_thread::sleep_for(5ms);
  std::printf("worker queue: %zu calls waiting\n\n", queue_depth(s));
  std::vector<newcomer_result> attacked;
  for (int i = 0; i < rounds; ++i) attacked.push_back(newcomer(s));
  add_rows(t, "under attack", attacked);
  t.print_markdown(std::cout);
  std::cout.flush();

  // The hostile connections close: their queued calls are dropped, the running ones end.
  for (auto& c : hostile) c->close();
  pending.clear();
  s.stop();
  const bool all_ok = std::all_of(alone.begin(), alone.end(), [](auto& r) { return r.ok; });
  return all_ok ? 0 : 1;
}

}  // namespace corvid::bench
