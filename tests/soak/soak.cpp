// corvid's soak (scripts/soak): mixed load for a set time against two fault_node server
// processes, printing calls, errors by kind, lost calls and the servers' RSS over time.
//   soak <fault_node> <seconds> [--report-every s] [--restart-every s] [--workers N]
//        [--churn-workers N] [--max-size B]
// Load (tests/fault/load.hpp): each worker makes one call at a time with a unique payload of
// 16 B..1 MiB (log-uniform; large ones every other call as attachments), checks the echo, and
// counts the outcome. `--workers` share one client_pool per server; `--churn-workers` each make
// a new pool every 200 calls and destroy the old one. Server "stable" is never restarted, so
// its RSS shows whether memory stays bounded; server "restarted" is stopped every
// --restart-every seconds, alternately with SIGKILL and SIGTERM (graceful stop), and started
// again on the same port while its clients keep calling.
// Exits non-zero if any call was lost (did not end), late (ended after its bound), or answered
// with another call's or damaged bytes.
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <memory>

#include "load.hpp"
#include "process_memory.hpp"
#include "server_process.hpp"
#include <sys/resource.h>

namespace {

using namespace corvid_fault;
using corvid_soak::server_process;

// The server's live heap (heap_in_use RPC on a fresh connection), or 0 if it cannot answer.
std::size_t server_heap(const std::string& endpoint) {
  return corvid::sync_wait([&]() -> corvid::task<std::size_t> {
    corvid::rpc_client c;
    if (co_await c.connect(endpoint)) co_return 0;
    auto r = co_await c.call_for<heap_in_use>(2s);
    co_return r ? static_cast<std::size_t>(*r) : 0;
  }());
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

struct soak_options {
  std::string node;
  int seconds = 60;
  int report_every = 30;
  int restart_every = 60;
  int workers = 8;
  int churn_workers = 4;
  std::size_t max_size = 1 << 20;
};

int run(const soak_options& so) {
  const std::string tag = std::to_string(::getpid());
  server_process stable(so.node, "/tmp/corvid-soak-" + tag + "-stable.log");
  server_process restarted(so.node, "/tmp/corvid-soak-" + tag + "-restarted.log");
  stable.start();
  restarted.start();

  load_stats st;
  std::vector<std::unique_ptr<load_options>> opts;
  std::vector<std::unique_ptr<worker_slot>> slots;
  std::vector<std::thread> threads;
  for (auto* srv : {&stable, &restarted}) {
    for (bool churn : {false, true}) {
      auto o = std::make_unique<load_options>();
      o->endpoint = srv->endpoint();
      o->max_size = so.max_size;
      o->call_timeout = 5000ms;
      o->connect_timeout = 2000ms;
      o->backoff_max = 1000ms;
      o->pool_connections = 4;
      o->churn_every = churn ? 200 : 0;
      o->lost_after = 30000ms;
      opts.push_back(std::move(o));
      const load_options& ref = *opts.back();
      auto shared = churn ? nullptr : corvid::client_pool::create(ref.endpoint, pool_settings(ref));
      const int n = (churn ? so.churn_workers : so.workers) / 2;
      for (int i = 0; i < n; ++i) {
        slots.push_back(std::make_unique<worker_slot>());
        threads.emplace_back(run_worker, std::cref(ref), shared, std::ref(st),
                             std::ref(*slots.back()), static_cast<unsigned>(slots.size() * 7919));
      }
    }
  }
  std::printf(
      "soak: %d s, %d shared-pool + %d churning workers, payload 16 B..%zu B, servers "
      "stable %s and restarted %s (every %d s)\n",
      so.seconds, so.workers / 2 * 2, so.churn_workers / 2 * 2, so.max_size,
      stable.endpoint().c_str(), restarted.endpoint().c_str(), so.restart_every);
  std::fflush(stdout);

  const auto begin = steady::now();
  auto next_report = begin + std::chrono::seconds(so.report_every);
  auto next_restart = begin + std::chrono::seconds(so.restart_every);
  const auto end = begin + std::chrono::seconds(so.seconds);
  int restarts = 0, unclean_stops = 0;
  std::size_t stable_rss_max = 0, restarted_rss_max = 0, client_rss_max = 0;
  std::size_t stable_rss_at_first = 0;  // at the first report, after warm-up
  std::size_t stable_heap_max = 0, stable_heap_first = 0, stable_heap_last = 0;
  std::uint64_t lost_now = 0;
  auto report = [&](const char* label) {
    const auto t = std::chrono::duration_cast<std::chrono::seconds>(steady::now() - begin);
    const auto s_rss = stable.rss_bytes(), r_rss = restarted.rss_bytes(),
               c_rss = corvid::test::vm_rss();
    stable_rss_max = std::max(stable_rss_max, s_rss);
    restarted_rss_max = std::max(restarted_rss_max, r_rss);
    client_rss_max = std::max(client_rss_max, c_rss);
    if (stable_rss_at_first == 0) stable_rss_at_first = s_rss;
    const auto s_heap = server_heap(stable.endpoint()), r_heap = server_heap(restarted.endpoint()),
               c_heap = static_cast<std::size_t>(heap_in_use());
    stable_heap_max = std::max(stable_heap_max, s_heap);
    if (stable_heap_first == 0) stable_heap_first = s_heap;
    stable_heap_last = s_heap;
    std::printf(
        "%s t=%llds calls=%llu ok=%llu errors=%s in_flight=%llu lost=%llu pools=%llu "
        "restarts=%d rss_MiB stable=%.1f restarted=%.1f client=%.1f heap_MiB stable=%.1f "
        "restarted=%.1f client=%.1f\n",
        label, static_cast<long long>(t.count()),
        static_cast<unsigned long long>(st.started.load()),
        static_cast<unsigned long long>(st.ok.load()), st.errors_by_kind().c_str(),
        static_cast<unsigned long long>(st.started.load() - st.ok.load() - st.error_total() -
                                        st.crossed.load() - st.corrupt.load()),
        static_cast<unsigned long long>(lost_now),
        static_cast<unsigned long long>(st.pools_created.load()), restarts, mib(s_rss), mib(r_rss),
        mib(c_rss), mib(s_heap), mib(r_heap), mib(c_heap));
    std::fflush(stdout);
  };
  while (steady::now() < end) {
    std::this_thread::sleep_for(100ms);
    lost_now = stuck_calls(slots, opts.front()->lost_after);
    if (lost_now > 0) break;
    const auto now = steady::now();
    if (now >= next_restart) {
      restarted_rss_max = std::max(restarted_rss_max, restarted.rss_bytes());
      const int sig = restarts % 2 == 0 ? SIGKILL : SIGTERM;
      const int status = restarted.stop(sig);
      if (sig == SIGTERM && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        ++unclean_stops;
        std::printf("soak: the restarted server did not exit 0 on SIGTERM (status %d)\n", status);
      }
      restarted.start();
      ++restarts;
      next_restart = now + std::chrono::seconds(so.restart_every);
    }
    if (now >= next_report) {
      report("soak:");
      next_report += std::chrono::seconds(so.report_every);
    }
  }
  st.stop = true;
  const auto give_up = steady::now() + opts.front()->lost_after;
  while (steady::now() < give_up && stuck_calls(slots, 0ms) > 0) std::this_thread::sleep_for(10ms);
  st.lost = stuck_calls(slots, 0ms);
  lost_now = st.lost;
  report("soak: final");
  std::printf(
      "soak: result calls=%llu ok=%llu errors=%s lost=%llu crossed=%llu corrupt=%llu "
      "late=%llu max_call_ms=%lld bytes_echoed_GiB=%.2f restarts=%d pools_created=%llu "
      "rss_max_MiB stable=%.1f (first report %.1f) restarted=%.1f client=%.1f "
      "stable_heap_MiB first=%.1f last=%.1f max=%.1f\n",
      static_cast<unsigned long long>(st.started.load()),
      static_cast<unsigned long long>(st.ok.load()), st.errors_by_kind().c_str(),
      static_cast<unsigned long long>(st.lost.load()),
      static_cast<unsigned long long>(st.crossed.load()),
      static_cast<unsigned long long>(st.corrupt.load()),
      static_cast<unsigned long long>(st.late.load()),
      static_cast<long long>(st.max_call_us.load() / 1000),
      static_cast<double>(st.bytes.load()) / (1u << 30), restarts,
      static_cast<unsigned long long>(st.pools_created.load()), mib(stable_rss_max),
      mib(stable_rss_at_first), mib(restarted_rss_max), mib(client_rss_max), mib(stable_heap_first),
      mib(stable_heap_last), mib(stable_heap_max));
  std::fflush(stdout);
  if (st.lost > 0) std::_Exit(1);  // stuck workers cannot be joined
  for (auto& t : threads) t.join();
  // Both servers stop gracefully and exit 0 (a sanitizer report would make them fail).
  for (auto* srv : {&stable, &restarted}) {
    const int status = srv->stop(SIGTERM);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      ++unclean_stops;
      std::printf("soak: a server did not exit 0 on SIGTERM (status %d)\n", status);
    }
  }
  std::printf("soak: unclean server stops: %d\n", unclean_stops);
  const bool good = st.lost + st.crossed + st.corrupt + st.late == 0 && unclean_stops == 0;
  return good ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: soak <fault_node> <seconds> [--report-every s] [--restart-every s]\n"
                 "            [--workers N] [--churn-workers N] [--max-size B]\n");
    return 2;
  }
  soak_options so;
  so.node = argv[1];
  so.seconds = std::atoi(argv[2]);
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const long v = std::atol(argv[i + 1]);
    if (k == "--report-every")
      so.report_every = static_cast<int>(v);
    else if (k == "--restart-every")
      so.restart_every = static_cast<int>(v);
    else if (k == "--workers")
      so.workers = static_cast<int>(v);
    else if (k == "--churn-workers")
      so.churn_workers = static_cast<int>(v);
    else if (k == "--max-size")
      so.max_size = static_cast<std::size_t>(v);
    else {
      std::fprintf(stderr, "soak: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return run(so);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "soak: %s\n", e.what());
    return 1;
  }
}
