// corvid-bench discovery (issue 25): N server processes registered in etcd; one client
// balancing by key (lb_policy::consistent_hash over etcd://) against the same servers as a
// fixed list (round robin): qps, how evenly the keys spread, and how many keys move when one
// server leaves (ideal: 1/N). With --policy, only --calls calls of that policy over a
// list:// of the servers, for bench/callgrind-balance's instructions per call.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <corvid/corvid.hpp>

#include "etcd_process.hpp"
#include "experiments.hpp"
#include "peer_process.hpp"

namespace corvid::bench {
namespace {

using namespace std::chrono_literals;

// The servers' one method: the instance's name, so the client sees which server owns a key.
struct named {
  std::string name;
  std::string lookup(std::string key) const { return key.empty() ? std::string() : name; }
};

std::string self_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string key_of(int k) { return "user:" + std::to_string(k); }

// `callers` threads calling for `seconds` (or `calls` in all, when > 0); keyed by random
// keys when `keyed`. Returns calls per second; any failure is fatal (a benchmark that loses
// calls measures nothing).
double drive(load_balancer& lb, int callers, double seconds, long calls, int keys, bool keyed) {
  std::atomic<long> done{0}, failed{0};
  std::atomic<bool> stop{false};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::string> names;
      names.reserve(static_cast<std::size_t>(keys));
      for (int k = 0; k < keys; ++k) names.push_back(key_of(k));
      std::minstd_rand rng(static_cast<unsigned>(t) * 7919u + 1u);
      sync_wait([&]() -> task<void> {
        call_options o;
        for (;;) {
          if (calls > 0 ? done.load() >= calls : stop.load()) break;
          const std::string& key = names[rng() % names.size()];
          if (keyed) o.hash_key = key;
          auto r = co_await lb.call_with<&named::lookup>(o, key);
          if (!r) {
            ++failed;
            std::fprintf(stderr, "corvid-bench discovery: call failed: %s\n",
                         r.error().message().c_str());
          }
          ++done;
        }
      }());
    });
  }
  if (calls <= 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
  }
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failed > 0) throw std::runtime_error(std::to_string(failed.load()) + " calls failed");
  return static_cast<double>(done.load()) / elapsed;
}

// Which server answers each key (one call each, nothing else in flight: no spill).
std::vector<std::string> owners(load_balancer& lb, int keys) {
  std::vector<std::string> out;
  sync_wait([&]() -> task<void> {
    call_options o;
    for (int k = 0; k < keys; ++k) {
      const std::string key = key_of(k);
      o.hash_key = key;
      auto r = co_await lb.call_with<&named::lookup>(o, key);
      if (!r) throw std::runtime_error("owner lookup failed: " + r.error().message());
      out.push_back(r->value);
    }
  }());
  return out;
}

std::shared_ptr<load_balancer> open_or_die(const std::string& url, lb_config cfg) {
  auto lb = sync_wait(load_balancer::open(url, cfg));
  if (!lb) throw std::runtime_error("open(" + url + "): " + lb.error().message());
  return *lb;
}

bool wait_for_endpoints(load_balancer& lb, std::size_t n) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (lb.endpoints().size() != n) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace

int run_discovery_server(const options& o) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = static_cast<std::size_t>(o.threads);
  cfg.registry = o.registry;
  cfg.registry_ttl = std::chrono::seconds(2);
  cfg.instance_id = o.name;
  named self{o.name};
  rpc_server server(cfg);
  server.register_handler<&named::lookup>(&self);
  if (auto e = server.async_start()) {
    std::fprintf(stderr, "corvid-bench discovery-server: %s\n", e.message().c_str());
    return 1;
  }
  std::printf("port %u\n", static_cast<unsigned>(server.port()));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.stop();
  return 0;
}

int run_discovery_experiment(const options& o) {
  if (o.flood > 0) return run_registry_flood(o);
  const int n = o.servers;
  const int callers = o.concurrency.empty() ? 1 : o.concurrency.front();
  std::unique_ptr<test::etcd_process> etcd;
  std::string registry = o.registry;
  const bool only_policy = !o.policy.empty();
  if (registry.empty() && !only_policy) {
    etcd = std::make_unique<test::etcd_process>();
    registry = "etcd://" + etcd->endpoint();
  }
  const std::string url = only_policy ? std::string() : registry + "/corvid-bench";
  const std::string self = self_path();
  std::vector<std::unique_ptr<test::peer_process>> servers;
  std::string list = "list://";
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> args{"discovery-server", "--name", "server-" + std::to_string(i),
                                  "--threads", std::to_string(o.threads)};
    if (!url.empty()) args.insert(args.end(), {"--registry", url});
    servers.push_back(std::make_unique<test::peer_process>(self, args));
    list += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(servers.back()->port());
  }

  // The client's reactors, with the run's --adaptive-poll (0 for callgrind: a reactor that
  // polls while it waits would count its spinning as the calls' instructions).
  io_pool reactors(static_cast<std::size_t>(o.threads), {}, std::chrono::nanoseconds(0),
                   o.adaptive_poll);
  if (only_policy) {
    // Instructions per call: the same list, the same keys; only the policy differs.
    lb_config cfg;
    cfg.pool.client.pool = &reactors;
    cfg.policy =
        o.policy == "consistent_hash" ? lb_policy::consistent_hash : lb_policy::round_robin;
    auto lb = open_or_die(list, cfg);
    const double qps = drive(*lb, 1, 0, o.calls, o.keys, cfg.policy == lb_policy::consistent_hash);
    std::printf("%s: %d calls, %.0f calls/s\n", o.policy.c_str(), o.calls, qps);
    return 0;
  }

  lb_config hash_cfg;
  hash_cfg.policy = lb_policy::consistent_hash;
  hash_cfg.pool.client.pool = &reactors;
  lb_config list_cfg;
  list_cfg.pool.client.pool = &reactors;
  auto by_key = open_or_die(url, hash_cfg);
  if (!wait_for_endpoints(*by_key, static_cast<std::size_t>(n))) {
    throw std::runtime_error("the servers did not all register in etcd");
  }
  auto fixed = open_or_die(list, list_cfg);
  const double warm = std::min(o.warmup, 0.5);
  drive(*by_key, callers, warm, 0, o.keys, true);
  drive(*fixed, callers, warm, 0, o.keys, false);
  const auto before = by_key->stats();
  const double qps_key = drive(*by_key, callers, o.duration, 0, o.keys, true);
  const auto after = by_key->stats();
  const double qps_list = drive(*fixed, callers, o.duration, 0, o.keys, false);

  // Key spread: each server's share of the keyed calls, against the even 1/N.
  std::vector<double> share;
  double total = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const double c = static_cast<double>(after[i].calls - before[i].calls);
    share.push_back(c);
    total += c;
  }
  const auto [lo, hi] = std::minmax_element(share.begin(), share.end());
  const double mean = total / static_cast<double>(share.size());

  // Remapping: owners of every key, one server leaves (SIGKILL: its lease expires), again.
  const auto first = owners(*by_key, o.keys);
  std::map<std::string, int> owned;
  for (const auto& o1 : first) ++owned[o1];
  int fewest = o.keys, most = 0;
  for (const auto& [server, count] : owned) {
    fewest = std::min(fewest, count);
    most = std::max(most, count);
  }
  const double fair = static_cast<double>(o.keys) / n;
  const std::string leaving = "server-" + std::to_string(n - 1);
  servers.back()->kill();
  if (!wait_for_endpoints(*by_key, static_cast<std::size_t>(n - 1))) {
    throw std::runtime_error("the killed server's key did not expire");
  }
  const auto second = owners(*by_key, o.keys);
  int moved = 0, moved_elsewhere = 0;
  for (int k = 0; k < o.keys; ++k) {
    if (first[k] == second[k]) continue;
    ++moved;
    if (first[k] != leaving) ++moved_elsewhere;
  }

  std::printf("discovery: %d servers (%d io thread%s each), %d callers, %d keys\n", n, o.threads,
              o.threads == 1 ? "" : "s", callers, o.keys);
  std::printf("  qps  consistent_hash over etcd: %.0f\n", qps_key);
  std::printf("  qps  round robin over a fixed list: %.0f (%.1f%% of it by key)\n", qps_list,
              100.0 * qps_key / qps_list);
  std::printf("  key spread: keys owned per server min %.1f%% / max %.1f%% of 1/N\n",
              100.0 * fewest / fair, 100.0 * most / fair);
  std::printf(
      "  call spread (load bound and spills included): min %.1f%% / max %.1f%% of the mean\n",
      100.0 * *lo / mean, 100.0 * *hi / mean);
  std::printf("  one of %d leaves: %.2f%% of keys moved (ideal %.2f%%), %d not its own\n", n,
              100.0 * moved / o.keys, 100.0 / n, moved_elsewhere);
  if (!o.csv.empty()) {
    std::ofstream csv(o.csv);
    csv << "servers,callers,keys,qps_consistent_hash,qps_round_robin,keys_min,keys_max,"
           "calls_min,calls_max,moved,moved_not_own\n"
        << n << "," << callers << "," << o.keys << "," << qps_key << "," << qps_list << ","
        << fewest / fair << "," << most / fair << "," << *lo / mean << "," << *hi / mean << ","
        << static_cast<double>(moved) / o.keys << "," << moved_elsewhere << "\n";
  }
  return moved_elsewhere == 0 ? 0 : 1;
}

}  // namespace corvid::bench
