#include "load.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "corvid/detail/switch_to.hpp"

#include "bench_service.hpp"
#include "metrics/histogram.hpp"

namespace corvid::bench {
namespace {
using metrics::histogram;

using clock = std::chrono::steady_clock;
enum phase : int { warmup = 0, measure = 1, stop = 2 };

// Per connection: touched only by that connection's reactor thread (workers resume there),
// except `calls`, which the progress line reads racily through a relaxed atomic.
struct lane {
  histogram latency;
  std::atomic<std::uint64_t> calls{0};
  std::uint64_t errors = 0;
  std::string first_error;
};

struct shared_state {
  std::atomic<int> phase{warmup};
  std::mutex m;
  std::condition_variable cv;
  int running = 0;
  // Through a pool a worker runs on whichever client thread its last call resumed on: it
  // records into that thread's lane (pool_lanes of them, taken in turn by new threads).
  std::vector<std::unique_ptr<lane>>* lanes = nullptr;
  std::atomic<std::size_t> next_lane{0};
  std::uint64_t id = next_id();  // cells may reuse one address

  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> ids{0};
    return ++ids;
  }
};

constexpr std::size_t pool_lanes = 64;

// The calling thread's lane for this cell.
lane& thread_lane(shared_state& st) {
  thread_local std::uint64_t cell = 0;
  thread_local std::size_t index = 0;
  if (cell != st.id) {
    cell = st.id;
    index = st.next_lane.fetch_add(1, std::memory_order_relaxed) % pool_lanes;
  }
  return *(*st.lanes)[index];
}

// Where one worker's calls go: a connection, a pool or a balancer (one of them set).
struct route {
  rpc_client* client = nullptr;
  client_pool* pool = nullptr;
  load_balancer* balancer = nullptr;
};

task<void> worker(route to, lane* own, shared_state& st, std::string_view payload,
                  const cell_params& p) {
  const call_options opts{std::chrono::milliseconds(60000), payload};
  const auto response = static_cast<std::uint32_t>(p.response_size);
  while (st.phase.load(std::memory_order_relaxed) != stop) {
    const auto t0 = clock::now();
    // Not `c ? co_await a : co_await b`: g++ 12 destroys that expression's result twice.
    expected<with_attachment<void>, rpc_error> r;
    if (to.balancer != nullptr) {
      r = co_await to.balancer->call_with<bench_call>(opts, response, p.echo);
    } else if (to.pool != nullptr) {
      r = co_await to.pool->call_with<bench_call>(opts, response, p.echo);
    } else {
      r = co_await to.client->call_with<bench_call>(opts, response, p.echo);
    }
    const auto t1 = clock::now();
    if (st.phase.load(std::memory_order_relaxed) != measure) continue;
    lane& l = own != nullptr ? *own : thread_lane(st);
    if (r) {
      l.latency.record(static_cast<std::uint64_t>((t1 - t0).count()));
      l.calls.store(l.calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    } else if (l.errors++ == 0) {
      l.first_error = r.error().message();
    }
  }
}

detail::detached drive(route to, lane* l, shared_state& st, std::string_view payload,
                       const cell_params& p, asio::io_context* home = nullptr) {
  if (home != nullptr) co_await detail::switch_to{*home};
  co_await worker(to, l, st, payload, p);
  std::lock_guard lk(st.m);
  if (--st.running == 0) st.cv.notify_all();
}

struct snapshot {
  transport_stats client;
  server_counters server;
};

snapshot take_snapshot(const load_target& target) {
  snapshot s;
  for (rpc_client* c : target.clients) {
    auto t = c->stats();
    s.client.frames_sent += t.frames_sent;
    s.client.write_syscalls += t.write_syscalls;
  }
  auto r = sync_wait([&]() -> task<expected<server_counters, rpc_error>> {
    if (target.balancer != nullptr) co_return co_await target.balancer->call<bench_stats>();
    if (target.pool != nullptr) co_return co_await target.pool->call<bench_stats>();
    co_return co_await target.clients[0]->call<bench_stats>();
  }());
  if (r) s.server = *r;
  return s;
}

double ratio(std::uint64_t a, std::uint64_t b) {
  return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
}

void sleep_with_progress(double seconds, const std::vector<std::unique_ptr<lane>>& lanes,
                         const progress_fn& progress) {
  const auto end = clock::now() + std::chrono::duration_cast<clock::duration>(
                                      std::chrono::duration<double>(seconds));
  auto last_t = clock::now();
  std::uint64_t last_calls = 0;
  for (auto& l : lanes) last_calls += l->calls.load(std::memory_order_relaxed);
  while (clock::now() < end) {
    std::this_thread::sleep_until(std::min(end, clock::now() + std::chrono::milliseconds(500)));
    std::uint64_t calls = 0;
    for (auto& l : lanes) calls += l->calls.load(std::memory_order_relaxed);
    const auto now = clock::now();
    if (progress && calls > last_calls) {
      progress(static_cast<double>(calls - last_calls) /
               std::chrono::duration<double>(now - last_t).count());
    }
    last_calls = calls;
    last_t = now;
  }
}

}  // namespace

cell_result run_cell(const load_target& target, const cell_params& p, const progress_fn& progress,
                     std::string* first_error) {
  const auto& clients = target.clients;
  const bool shared = target.pool != nullptr || target.balancer != nullptr;
  const std::size_t lane_count = shared ? pool_lanes : clients.size();
  const std::string payload(p.payload, 'p');
  shared_state st;
  std::vector<std::unique_ptr<lane>> lanes;
  for (std::size_t i = 0; i < lane_count; ++i) lanes.push_back(std::make_unique<lane>());
  st.lanes = &lanes;
  st.running = p.concurrency;
  for (int i = 0; i < p.concurrency; ++i) {
    const std::size_t k = static_cast<std::size_t>(i) % lane_count;
    if (shared) {
      asio::io_context* home =
          target.reactors != nullptr
              ? &target.reactors->at(static_cast<std::size_t>(i) % target.reactors->size())
              : nullptr;
      drive({nullptr, target.pool, target.balancer}, nullptr, st, payload, p, home);
    } else {
      drive({clients[k], nullptr, nullptr}, lanes[k].get(), st, payload, p);
    }
  }
  sleep_with_progress(p.warmup_seconds, lanes, {});
  const snapshot before = take_snapshot(target);
  const auto t0 = clock::now();
  st.phase.store(measure);
  sleep_with_progress(p.duration_seconds, lanes, progress);
  st.phase.store(stop);
  const auto t1 = clock::now();
  const snapshot after = take_snapshot(target);
  {
    std::unique_lock lk(st.m);
    st.cv.wait(lk, [&] { return st.running == 0; });
  }

  histogram all;
  cell_result r;
  for (auto& l : lanes) {
    all.merge(l->latency);
    r.calls += l->calls.load();
    r.errors += l->errors;
    if (first_error != nullptr && first_error->empty()) *first_error = l->first_error;
  }
  r.payload = p.payload;
  r.response_size = p.echo ? p.payload : p.response_size;
  r.echo = p.echo;
  r.concurrency = p.concurrency;
  r.connections = static_cast<int>(target.pool != nullptr       ? target.pool->stats().connections
                                   : target.balancer != nullptr ? 0
                                                                : clients.size());
  r.seconds = std::chrono::duration<double>(t1 - t0).count();
  r.qps = static_cast<double>(r.calls) / r.seconds;
  r.gbps = r.qps * static_cast<double>(p.payload) * 8 / 1e9;
  r.p50_us = static_cast<double>(all.percentile(50)) / 1e3;
  r.p90_us = static_cast<double>(all.percentile(90)) / 1e3;
  r.p99_us = static_cast<double>(all.percentile(99)) / 1e3;
  r.p999_us = static_cast<double>(all.percentile(99.9)) / 1e3;
  r.client_rpcs_per_write = shared
                                ? -1.0
                                : ratio(after.client.frames_sent - before.client.frames_sent,
                                        after.client.write_syscalls - before.client.write_syscalls);
  const auto& sa = after.server.transport;
  const auto& sb = before.server.transport;
  r.server_rpcs_per_write =
      ratio(sa.frames_sent - sb.frames_sent, sa.write_syscalls - sb.write_syscalls);
  r.server_peak_bytes = after.server.memory_peak;
  r.server_allocs_per_call = ratio(after.server.allocations - before.server.allocations,
                                   sa.frames_received - sb.frames_received);
  return r;
}

long long tcp_segments_sent() {
  std::ifstream snmp("/proc/net/snmp");
  std::string header, values;
  while (std::getline(snmp, header) && std::getline(snmp, values)) {
    if (!header.starts_with("Tcp:")) continue;
    std::istringstream h(header), v(values);
    std::string name, value;
    while (h >> name && v >> value) {
      if (name == "OutSegs") return std::stoll(value);
    }
  }
  return -1;
}

}  // namespace corvid::bench
