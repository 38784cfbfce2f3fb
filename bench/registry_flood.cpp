// corvid-bench discovery --flood N: a balancer following N endpoints through a file:// source
// (the same update path as etcd's and DNS's): --servers real servers in this process, the rest
// addresses that refuse connections. It reports how long open() takes on all N and the RSS it
// adds, then, with keyed calls running (consistent_hash) on a balancer that first knew only
// the real servers, the flood's arrival and updates every 50 ms (each a new view and ring), the
// calls' latency before and during them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <corvid/corvid.hpp>

#include "experiments.hpp"
#include "process_memory.hpp"

namespace corvid::bench {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

struct named {
  std::string name;
  std::string lookup(std::string key) const { return key.empty() ? std::string() : name; }
};

void write_file(const std::string& path, const std::vector<std::string>& lines, std::size_t n) {
  {
    std::ofstream out(path + ".new");
    for (std::size_t i = 0; i < n && i < lines.size(); ++i) out << lines[i] << "\n";
  }
  std::filesystem::rename(path + ".new", path);
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

struct latencies {
  std::vector<double> us;
  void add(std::vector<double>& more) { us.insert(us.end(), more.begin(), more.end()); }
  double at(double q) {
    if (us.empty()) return 0;
    std::sort(us.begin(), us.end());
    return us[std::min(us.size() - 1,
                       static_cast<std::size_t>(q * static_cast<double>(us.size())))];
  }
};

// Keyed calls from `callers` threads until `stop`; each call's latency goes to its thread's
// list of the current phase.
class callers {
 public:
  callers(load_balancer& lb, int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, &lb, t] {
        std::minstd_rand rng(static_cast<unsigned>(t) + 1u);
        std::vector<double> mine[2];
        sync_wait([&]() -> task<void> {
          call_options o;
          while (!stop_) {
            const std::string key = "user:" + std::to_string(rng() % 10000);
            o.hash_key = key;
            const auto start = steady::now();
            auto r = co_await lb.call_with<&named::lookup>(o, key);
            const double us =
                std::chrono::duration<double, std::micro>(steady::now() - start).count();
            if (!r) ++failed_;
            mine[phase_.load()].push_back(us);
          }
        }());
        std::lock_guard lk(mutex_);
        for (int p = 0; p < 2; ++p) phases_[p].add(mine[p]);
      });
    }
  }
  void next_phase() { phase_ = 1; }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  latencies& phase(int p) { return phases_[p]; }
  long failed() const { return failed_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> phase_{0};
  std::atomic<long> failed_{0};
  std::mutex mutex_;
  latencies phases_[2];
  std::vector<std::thread> threads_;
};

}  // namespace

int run_registry_flood(const options& o) {
  const auto n = static_cast<std::size_t>(o.flood);
  const int real = o.servers;
  std::vector<std::unique_ptr<named>> names;
  std::vector<std::unique_ptr<rpc_server>> servers;
  std::vector<std::string> lines;
  for (int i = 0; i < real; ++i) {
    server_config sc;
    sc.address = "127.0.0.1";
    sc.io_threads = 1;
    names.push_back(std::make_unique<named>(named{"server-" + std::to_string(i)}));
    servers.push_back(std::make_unique<rpc_server>(sc));
    servers.back()->register_handler<&named::lookup>(names.back().get());
    if (auto e = servers.back()->async_start()) throw std::runtime_error(e.message());
    lines.push_back("127.0.0.1:" + std::to_string(servers.back()->port()));
  }
  // Distinct addresses on other loopback hosts (127.0.x.y, nothing listens there).
  for (std::size_t i = lines.size(); i < n; ++i) {
    lines.push_back("127.0." + std::to_string(2 + i / 40000) + "." +
                    std::to_string(2 + (i / 200) % 200) + ":" + std::to_string(20000 + i % 200));
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / ("corvid-flood-" + std::to_string(::getpid())))
          .string();
  io_pool reactors(static_cast<std::size_t>(o.threads), {}, std::chrono::nanoseconds(0),
                   o.adaptive_poll);
  lb_config cfg;
  cfg.policy = lb_policy::consistent_hash;
  cfg.max_endpoints = n;
  cfg.file_poll_interval = 20ms;
  cfg.pool.client.pool = &reactors;
  const std::string url = "file://" + path;

  // open() on all N at once.
  write_file(path, lines, n);
  const std::size_t rss_before = test::proc_status_bytes("VmRSS");
  auto start = steady::now();
  auto full = sync_wait(load_balancer::open(url, cfg));
  if (!full) throw std::runtime_error("open: " + full.error().message());
  const double open_ms = std::chrono::duration<double, std::milli>(steady::now() - start).count();
  const std::size_t rss_open = test::proc_status_bytes("VmRSS");
  const std::size_t followed = (*full)->endpoints().size();
  full->reset();

  // The flood arriving under calls, then updates every 50 ms.
  write_file(path, lines, static_cast<std::size_t>(real));
  auto lb = sync_wait(load_balancer::open(url, cfg));
  if (!lb) throw std::runtime_error("open: " + lb.error().message());
  const int threads = o.concurrency.empty() ? 4 : o.concurrency.front();
  callers c(**lb, threads);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration));
  c.next_phase();
  start = steady::now();
  write_file(path, lines, n);
  while ((*lb)->endpoints().size() != n && steady::now() - start < 60s)
    std::this_thread::sleep_for(1ms);
  const double apply_ms = std::chrono::duration<double, std::milli>(steady::now() - start).count();
  const std::size_t rss_flood = test::proc_status_bytes("VmRSS");
  int updates = 0;
  const auto until = steady::now() + std::chrono::duration<double>(o.duration);
  while (steady::now() < until) {
    write_file(path, lines, n - static_cast<std::size_t>(updates % 2));  // one leaves, returns
    ++updates;
    std::this_thread::sleep_for(50ms);
  }
  c.stop();
  std::filesystem::remove(path);

  std::printf("discovery --flood: %zu endpoints (%d answering), %d callers, keyed calls\n", n, real,
              threads);
  std::printf("  open() on all of them: %.0f ms, %zu followed, RSS +%.1f MiB\n", open_ms, followed,
              mib(rss_open - std::min(rss_open, rss_before)));
  std::printf("  the flood arriving under calls: applied in %.0f ms, RSS %.1f MiB\n", apply_ms,
              mib(rss_flood));
  for (int p = 0; p < 2; ++p) {
    auto& l = c.phase(p);
    const double p50 = l.at(0.5), p99 = l.at(0.99), max = l.at(1.0);
    std::printf("  %-34s %8zu calls  P50 %7.1f us  P99 %8.1f us  max %9.1f us\n",
                p == 0 ? "before the flood:" : "flood + an update every 50 ms:", l.us.size(), p50,
                p99, max);
  }
  std::printf("  updates applied: %d, failed calls: %ld\n", updates, c.failed());
  return c.failed() == 0 ? 0 : 1;
}

}  // namespace corvid::bench
