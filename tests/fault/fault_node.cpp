// One side of a fault test, run as its own process (tests/fault/netns_fault_test.sh puts the
// two in different network namespaces):
//   fault_node server <address> <port>      serves echo/echo_attachment/heap_in_use until
//                                           SIGTERM/SIGINT
//   fault_node client <endpoint> <seconds> [--workers N] [--min-size B] [--max-size B]
//                     [--timeout ms] [--connect-timeout ms] [--churn N]
// The client drives load_options' load through a client_pool. SIGUSR1 marks "fault injected",
// SIGUSR2 "path restored"; each mark is acknowledged on stdout ("marked fault", "marked heal")
// once recorded, so the driver can wait for it. It ends with one line
//   result calls=.. ok=.. errors=kind:n,.. crossed=0 corrupt=0 late=0 lost=0 ok_before_fault=..
//          ok_during_fault=.. ok_after_heal=.. recovery_ms=.. max_call_ms=.. bound_ms=..
//          fault_ms=.. fault_calls=.. fault_bytes=.. fault_min_ms=.. fault_p50_ms=..
// (fault_*: the calls wholly between the marks, see load_stats::fault_summary) and exits 0
// only if no call was crossed, corrupted, late (over bound_ms) or lost, calls succeeded before
// the fault and, when a heal was marked, again after it.
#include <csignal>
#include <cstdlib>
#include <pthread.h>

#include "load.hpp"

namespace {

using namespace corvid_fault;

sigset_t blocked_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) sigaddset(&s, sig);
  return s;
}

int run_server(const std::string& address, int port) {
  corvid::server_config cfg;
  cfg.address = address;
  cfg.port = static_cast<std::uint16_t>(port);
  cfg.io_threads = 2;
  cfg.stop_timeout = 1000ms;
  corvid::rpc_server server(cfg);
  server.register_handler<echo, echo_attachment, heap_in_use>();
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "fault_node server: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening on %u\n", server.port());
  std::fflush(stdout);
  const sigset_t stop = blocked_signals();
  int sig = 0;
  do {
    sigwait(&stop, &sig);
  } while (sig != SIGINT && sig != SIGTERM);
  server.stop();
  return 0;
}

// `pool`: the shared pool; its connect attempts show whether the clients stormed the server.
void print_result(const load_options& o, const load_stats& st, const corvid::client_pool& pool) {
  const auto ps = pool.stats();
  std::printf(
      "result calls=%llu ok=%llu errors=%s crossed=%llu corrupt=%llu late=%llu lost=%llu "
      "ok_before_fault=%llu ok_during_fault=%llu ok_after_heal=%llu recovery_ms=%.0f "
      "max_call_ms=%lld bound_ms=%lld connect_attempts=%zu connect_failures=%zu%s\n",
      static_cast<unsigned long long>(st.started.load()),
      static_cast<unsigned long long>(st.ok.load()), st.errors_by_kind().c_str(),
      static_cast<unsigned long long>(st.crossed.load()),
      static_cast<unsigned long long>(st.corrupt.load()),
      static_cast<unsigned long long>(st.late.load()),
      static_cast<unsigned long long>(st.lost.load()),
      static_cast<unsigned long long>(st.ok_before_fault.load()),
      static_cast<unsigned long long>(st.ok_during_fault.load()),
      static_cast<unsigned long long>(st.ok_after_heal.load()), st.recovery_ms(),
      static_cast<long long>(st.max_call_us.load() / 1000),
      static_cast<long long>(o.bound().count()), ps.connect_attempts, ps.connect_failures,
      st.fault_summary().c_str());
  std::fflush(stdout);
}

int run_client(load_options o, int seconds) {
  load_stats st;
  // SIGUSR1/2 from the driver mark the fault and the heal; SIGTERM ends the run early.
  std::thread marks([&] {
    const sigset_t s = blocked_signals();
    for (int sig = 0; !st.stop.load();) {
      sigwait(&s, &sig);
      if (st.stop.load()) break;  // the wake-up at the end
      if (sig == SIGUSR1 || sig == SIGUSR2) {
        (sig == SIGUSR1 ? st.fault_at : st.heal_at) = ticks_now();
        std::printf("marked %s\n", sig == SIGUSR1 ? "fault" : "heal");
        std::fflush(stdout);
      }
      if (sig == SIGINT || sig == SIGTERM) st.stop = true;
    }
  });
  auto pool = corvid::client_pool::create(o.endpoint, pool_settings(o));
  std::vector<std::unique_ptr<worker_slot>> slots;
  std::vector<std::thread> workers;
  for (int i = 0; i < o.workers; ++i) {
    slots.push_back(std::make_unique<worker_slot>());
    workers.emplace_back(run_worker, std::cref(o), pool, std::ref(st), std::ref(*slots.back()),
                         1234u + static_cast<unsigned>(i));
  }
  std::printf("running %d workers against %s for %d s\n", o.workers, o.endpoint.c_str(), seconds);
  std::fflush(stdout);
  const auto end = steady::now() + std::chrono::seconds(seconds);
  while (steady::now() < end && !st.stop.load()) std::this_thread::sleep_for(50ms);
  st.stop = true;
  pthread_kill(marks.native_handle(), SIGUSR1);  // wake the sigwait
  marks.join();
  // Every worker finishes its current call within its bound; one that does not is lost.
  const auto give_up = steady::now() + o.lost_after;
  while (steady::now() < give_up && stuck_calls(slots, 0ms) > 0) std::this_thread::sleep_for(10ms);
  st.lost = stuck_calls(slots, 0ms);
  if (st.lost > 0) {
    print_result(o, st, *pool);
    std::fflush(stderr);
    std::_Exit(1);  // stuck threads cannot be joined
  }
  for (auto& w : workers) w.join();
  print_result(o, st, *pool);
  const bool healed_ok = st.heal_at.load() == 0 || st.ok_after_heal.load() > 0;
  return st.crossed + st.corrupt + st.late == 0 && st.ok_before_fault > 0 && healed_ok ? 0 : 1;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: fault_node server <address> <port>\n"
      "       fault_node client <endpoint> <seconds> [--workers N] [--min-size B]\n"
      "                  [--max-size B] [--timeout ms] [--connect-timeout ms] [--churn N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Blocked before any thread starts, so every thread inherits the mask and sigwait gets them.
  const sigset_t s = blocked_signals();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  if (argc < 4) return usage();
  const std::string mode = argv[1];
  if (mode == "server") return run_server(argv[2], std::atoi(argv[3]));
  if (mode != "client") return usage();
  load_options o;
  o.endpoint = argv[2];
  const int seconds = std::atoi(argv[3]);
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const long v = std::atol(argv[i + 1]);
    if (k == "--workers")
      o.workers = static_cast<int>(v);
    else if (k == "--min-size")
      o.min_size = static_cast<std::size_t>(v);
    else if (k == "--max-size")
      o.max_size = static_cast<std::size_t>(v);
    else if (k == "--timeout")
      o.call_timeout = std::chrono::milliseconds(v);
    else if (k == "--connect-timeout")
      o.connect_timeout = std::chrono::milliseconds(v);
    else if (k == "--churn")
      o.churn_every = static_cast<int>(v);
    else
      return usage();
  }
  return run_client(o, seconds);
}
