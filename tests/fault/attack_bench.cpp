// attack_bench: a well-behaved client's latency while hostile clients (attacks.hpp) attack
// the same server. Measured, never asserted (docs/reliability.md has the figures).
//   attack_bench [seconds per phase (default 10)] [frame_read_timeout ms (default 2000)]
// Phases: idle, slowloris (200 connections, 1 byte/s each), connection churn (2 threads),
// large transfers cut off (2 threads), liars (4 threads), all of them at once. The server (2
// reactors), the attackers and the client share this process and the machine's cores, as on
// a small host. Prints a markdown table: good-client calls, P50/P99/P99.9/max latency, failed
// calls and attack actions per phase. Exits 1 if the good client saw any failure.
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "attacks.hpp"
#include "good_client.hpp"
#include "load.hpp"

namespace {

using namespace corvid_attack;

template <class Config>
bool set_frame_read_timeout(Config& cfg, std::chrono::milliseconds t) {
  if constexpr (requires { cfg.frame_read_timeout = t; }) {
    cfg.frame_read_timeout = t;
    return true;
  } else {
    return false;
  }
}

struct phase {
  const char* name;
  std::vector<std::function<void(attack_context&)>> attackers;
};

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 10;
  const auto read_timeout = std::chrono::milliseconds(argc > 2 ? std::atoi(argv[2]) : 2000);
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 2;
  const bool has_timeout = set_frame_read_timeout(cfg, read_timeout);
  corvid::rpc_server server(cfg);
  server.register_handler<corvid_fault::echo>();
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "attack_bench: %s\n", ec.message().c_str());
    return 1;
  }
  const std::uint32_t echo_id = corvid::protocol::function_id<corvid_fault::echo>();
  const auto slow = [](attack_context& a) {
    slowloris(a, 200, 1000ms);
  };
  const auto churner = [](attack_context& a) {
    churn(a, 1);
  };
  const auto cutter = [](attack_context& a) {
    large_disconnects(a, 2);
  };
  const auto liar = [](attack_context& a) {
    liars(a, 3);
  };
  const std::vector<phase> phases = {
      {"idle (no attack)", {}},
      {"slowloris: 200 connections, 1 byte/s", {slow}},
      {"connection churn (2 threads)", {churner, churner}},
      {"1 MiB transfers cut off (2 threads)", {cutter, cutter}},
      {"lying lengths (4 threads)", {liar, liar, liar, liar}},
      {"all of the above at once", {slow, churner, churner, cutter, cutter, liar, liar}},
  };
  std::printf(
      "attack_bench: %d s per phase, frame_read_timeout %s, 64 B echo calls back to "
      "back on one connection\n\n",
      seconds,
      has_timeout ? (std::to_string(read_timeout.count()) + " ms").c_str() : "not in this build");
  std::printf(
      "| Phase | good calls | P50 µs | P99 µs | P99.9 µs | max µs | failed | attack "
      "actions |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  std::fflush(stdout);
  good_client<corvid_fault::echo> g("127.0.0.1:" + std::to_string(server.port()));
  g.wait_for_calls(100, 10s);
  bool any_failed = false;
  for (const auto& p : phases) {
    std::atomic<bool> stop{false};
    attack_context a{server.port(), echo_id, stop};
    std::vector<std::thread> threads;
    for (const auto& f : p.attackers) threads.emplace_back([&a, f] { f(a); });
    std::this_thread::sleep_for(500ms);  // let the attack get going
    const auto failed_before = g.failed();
    g.take_latencies();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    auto lat = g.take_latencies();
    const auto failed = g.failed() - failed_before;
    stop = true;
    for (auto& t : threads) t.join();
    any_failed = any_failed || failed > 0;
    const double p50 = percentile(lat, 50), p99 = percentile(lat, 99), p999 = percentile(lat, 99.9),
                 max = lat.empty() ? 0 : lat.back();
    std::printf("| %s | %zu | %.0f | %.0f | %.0f | %.0f | %llu | %llu |\n", p.name, lat.size(), p50,
                p99, p999, max, static_cast<unsigned long long>(failed),
                static_cast<unsigned long long>(a.actions.load()));
    std::fflush(stdout);
  }
  g.stop();
  if (any_failed) std::printf("\nfirst failure: %s\n", g.first_error().c_str());
  // Every attacker's connection is gone now; the server must drop them all.
  const auto ended = steady::now();
  const auto left = server.connection_count();
  while (server.connection_count() > 1 && steady::now() < ended + 10s) {
    std::this_thread::sleep_for(10ms);
  }
  std::printf("\nserver connections when the attacks ended: %zu; %zu after %.0f ms more\n", left,
              server.connection_count(),
              std::chrono::duration<double, std::milli>(steady::now() - ended).count());
  server.stop();
  return any_failed ? 1 : 0;
}
