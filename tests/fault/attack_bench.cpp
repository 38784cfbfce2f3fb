// attack_bench: a well-behaved client's latency while hostile clients (attacks.hpp) attack
// the same server. Measured, never asserted (docs/reliability.md has the figures).
//   attack_bench [seconds per phase (default 10)] [frame_read_timeout ms (default 2000)]
// Phases: idle, slowloris (200 connections, 1 byte/s each), connection churn (2 threads),
// large transfers cut off (2 threads), liars (4 threads), all of them at once. The server (2
// reactors), the attackers and the client share this process and the machine's cores, as on
// a small host. Prints a markdown table: good-client calls, P50/P99/P99.9/max latency, failed
// calls and attack actions per phase. Exits 1 if the good client saw any failure there.
//
// Then issue 11's scenarios, each against its own server with a 64 MiB limit (defaults
// otherwise): reply amplification, claimed counts, a slow-call flood, a cancel storm,
// clients that never read, headers with false lengths. Each runs for the phase's seconds (or
// until its attack is spent) and prints: what the attack sent, the server's tracked peak
// (rpc_server::memory()), the process's RSS peak over its start (VmHWM), and the good
// client's calls, P50/P99 and failures. Their failures are printed, not fatal:
// hostile_peers_test asserts the bounds; this measures them for docs/reliability.md.
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "attacks.hpp"
#include "good_client.hpp"
#include "hostile_handlers.hpp"
#include "load.hpp"

namespace {

using namespace corvid_attack;

struct phase {
  const char* name;
  std::vector<std::function<void(attack_context&)>> attackers;
};

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;
using namespace corvid_hostile;
using corvid::protocol::function_id;

// One of issue 11's scenarios: `attack` runs against `server` until `until` (or until it is
// spent), returns the bytes it sent, and may say more in `note`.
struct scenario {
  const char* name;
  std::size_t io_threads;    // 1 where the good client must share the attacked reactor
  std::size_t good_payload;  // the good client's echo size
  std::function<std::size_t(corvid::rpc_server&, steady::time_point until, std::string& note)>
      attack;
  std::size_t max_calls_per_connection = 0;  // 0: the default
};

// Nonblocking: what of `bytes` the socket takes now (a server that stopped reading takes
// nothing); the count sent.
std::size_t send_now(raw_socket& s, std::string_view bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const auto n =
        ::send(s.fd(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  return sent;
}
// Sends `bytes` until `until`; the count sent.
std::size_t send_by(raw_socket& s, std::string_view bytes, steady::time_point until) {
  std::size_t sent = 0;
  while (sent < bytes.size() && steady::now() < until) {
    const auto n = send_now(s, bytes.substr(sent));
    sent += n;
    if (n == 0) std::this_thread::sleep_for(1ms);
  }
  return sent;
}
void wait_until(steady::time_point until) {
  while (steady::now() < until) std::this_thread::sleep_for(5ms);
}

std::string mib(std::size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(bytes) / MiB);
  return b;
}

void run_scenario(const scenario& sc, int seconds) {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = sc.io_threads;
  cfg.max_memory = corvid::memory_limit::bytes(64 * MiB);
  if (sc.max_calls_per_connection != 0) cfg.max_calls_per_connection = sc.max_calls_per_connection;
  cfg.stop_timeout = 500ms;
  corvid::rpc_server server(cfg);
  server.register_handler<corvid_fault::echo, big, count_pages, count_strings, slow>();
  if (auto ec = server.async_start()) {
    std::printf("| %s | server did not start: %s |\n", sc.name, ec.message().c_str());
    return;
  }
  std::size_t sent = 0, peak = 0, rss_peak = 0;
  std::string note;
  std::vector<double> lat;
  std::uint64_t failed = 0;
  {
    good_client<corvid_fault::echo> g("127.0.0.1:" + std::to_string(server.port()), sc.good_payload,
                                      1ms, 2s);
    g.wait_for_calls(20, 10s);
    const std::size_t rss_before = vm_rss();
    reset_vm_hwm();
    server.reset_memory_peak();
    g.take_latencies();
    const auto failed_before = g.failed();
    sent = sc.attack(server, steady::now() + std::chrono::seconds(seconds), note);
    lat = g.take_latencies();
    failed = g.failed() - failed_before;
    peak = server.memory().peak;
    const std::size_t hwm = vm_hwm();
    rss_peak = hwm > rss_before ? hwm - rss_before : 0;
    g.stop();
  }
  std::printf("| %s | %s | %s | %s | %zu | %.0f | %.0f | %llu | %s |\n", sc.name,
              sent >= MiB ? (mib(sent) + " MiB").c_str() : (std::to_string(sent) + " B").c_str(),
              mib(peak).c_str(), mib(rss_peak).c_str(), lat.size(), percentile(lat, 50),
              percentile(lat, 99), static_cast<unsigned long long>(failed), note.c_str());
  std::fflush(stdout);
}

// 48 calls of big(8 MiB) in one write (384 MiB of replies), never read; closed at the end.
std::size_t amplification(corvid::rpc_server& server, steady::time_point until, std::string&) {
  std::string batch;
  for (std::uint64_t id = 1; id <= 48; ++id) {
    batch += encoded_request(id, function_id<big>(), std::uint32_t{8 * MiB});
  }
  raw_socket s(server.port(), 0, 16 * KiB);
  const std::size_t sent = send_by(s, batch, until);
  wait_until(until);
  return sent;
}

// Back to back on one connection, each read before the next: vector<optional<array<u8,
// 4096>>> x 64 Ki (64 KiB sent, 256 MiB decoded) and vector<string> x 6 Mi (6 MiB, 192 MiB).
std::size_t claimed_counts(corvid::rpc_server& server, steady::time_point until,
                           std::string& note) {
  const std::string pages =
      raw_request(1, function_id<count_pages>(), claimed_count_body(64 * 1024));
  const std::string strings =
      raw_request(2, function_id<count_strings>(), claimed_count_body(6 * 1024 * 1024));
  raw_socket s(server.port());
  std::size_t sent = 0;
  int calls = 0, ok = 0;
  while (steady::now() < until) {
    const std::string& req = calls % 2 ? strings : pages;
    if (!s.send(req)) break;
    sent += req.size();
    ++calls;
    auto r = s.read_frame(5s);
    if (!r) break;
    ok += r->header.status == corvid::rpc_errc::ok;
  }
  note = std::to_string(calls) + " calls, " + std::to_string(ok) + " answered ok";
  return sent;
}

// 100,000 calls to slow(30 s) on one connection (3.6 MB), held for the phase, then a FIN;
// notes the calls still running 1 s after it.
std::size_t slow_call_flood(corvid::rpc_server& server, steady::time_point until,
                            std::string& note) {
  slow_running = 0;
  std::string batch;
  for (std::uint64_t id = 1; id <= 100'000; ++id) {
    batch += encoded_request(id, function_id<slow>(), std::int32_t{30'000});
  }
  raw_socket s(server.port());
  const std::size_t sent = send_by(s, batch, until);
  wait_until(until);
  const auto running = slow_running.load();
  s.close();
  std::this_thread::sleep_for(1s);
  note = std::to_string(running) + " calls running; " + std::to_string(slow_running.load()) +
         " still 1 s after the FIN";
  return sent;
}

// 20,000 calls to slow(30 s) on one connection, then rounds of 4,096 cancels for ids not
// running, each with a ping, up to 16 rounds (65,536 cancels) or the phase's end.
std::size_t cancel_storm(corvid::rpc_server& server, steady::time_point until, std::string& note) {
  slow_running = 0;
  std::string batch;
  for (std::uint64_t id = 1; id <= 20'000; ++id) {
    batch += encoded_request(id, function_id<slow>(), std::int32_t{30'000});
  }
  batch += ping_frame(1);
  raw_socket s(server.port());
  std::size_t sent = send_by(s, batch, until);
  if (!s.read_frame(10s)) {
    note = "the 20,000 calls were not all taken";
    return sent;
  }
  const auto begin = steady::now();
  int rounds = 0;
  std::uint64_t next = 1'000'000;
  for (; rounds < 16 && steady::now() < until; ++rounds) {
    std::string storm;
    for (int i = 0; i < 4096; ++i) storm += cancel_frame(next++);
    storm += ping_frame(2 + static_cast<std::uint64_t>(rounds));
    if (!s.send(storm)) break;
    sent += storm.size();
    if (!s.read_frame(
            std::chrono::duration_cast<std::chrono::milliseconds>(until - steady::now() + 100ms))) {
      break;
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(steady::now() - begin).count();
  note = std::to_string(rounds) + " x 4,096 cancels answered in " +
         std::to_string(static_cast<long>(ms)) + " ms";
  wait_until(until);
  s.reset();
  return sent;
}

// 8 connections ask for big(1 MiB) one request per 2 ms each, and never read.
std::size_t non_readers(corvid::rpc_server& server, steady::time_point until, std::string& note) {
  std::vector<raw_socket> conns;
  for (int i = 0; i < 8; ++i) conns.emplace_back(server.port(), 0, 16 * KiB);
  const std::string one = encoded_request(1, function_id<big>(), std::uint32_t{MiB});
  std::size_t sent = 0;
  while (steady::now() < until) {
    for (auto& c : conns) sent += send_now(c, one) == one.size() ? one.size() : 0;
    std::this_thread::sleep_for(2ms);
  }
  note = std::to_string(server.connection_count() - 1) + " of 8 still open at the end";
  return sent;
}

// 48 connections each send a request header claiming 1 MiB, and nothing more (the good
// client's calls are 1 MiB echoes here).
std::size_t false_headers(corvid::rpc_server& server, steady::time_point until, std::string& note) {
  std::vector<raw_socket> conns;
  std::size_t sent = 0;
  for (int i = 0; i < 48; ++i) {
    conns.emplace_back(server.port());
    const std::string h = request_header(1, corvid::protocol::function_id<corvid_fault::echo>(),
                                         static_cast<std::uint32_t>(MiB));
    if (conns.back().send(h)) sent += h.size();
  }
  std::this_thread::sleep_for(100ms);
  const auto m = server.memory();
  if (const auto* r = m.find("read_buffers")) {
    note = "read buffers hold " + mib(r->current) + " of " + mib(r->limit) + " MiB";
  }
  wait_until(until);
  return sent;
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 10;
  const auto read_timeout = std::chrono::milliseconds(argc > 2 ? std::atoi(argv[2]) : 2000);
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 2;
  cfg.frame_read_timeout = read_timeout;
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
      "attack_bench: %d s per phase, frame_read_timeout %lld ms, 64 B echo calls back to "
      "back on one connection\n\n",
      seconds, static_cast<long long>(read_timeout.count()));
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

  // Issue 11's scenarios (hostile_peers_test has their assertions).
  std::printf(
      "\nissue 11 scenarios: a server with max_memory 64 MiB each, %d s each\n\n"
      "| Scenario | attack sent | tracked peak MiB | RSS peak +MiB | good calls | P50 µs | "
      "P99 µs | failed | note |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
      seconds);
  const std::vector<scenario> scenarios = {
      {"reply amplification: 48 x big(8 MiB), never read", 2, 64, amplification},
      {"claimed counts: 256 MiB / 192 MiB decoded per call", 2, 64, claimed_counts},
      {"slow-call flood: 100,000 x slow(30 s)", 2, 64, slow_call_flood},
      // The per-connection cap raised past the 20,000 calls, as hostile_peers_test does:
      // the storm must meet them all running.
      {"cancel storm: 65,536 cancels, 20,000 running (1 reactor)", 1, 64, cancel_storm, 32768},
      {"never-readers: 8 x big(1 MiB) per 2 ms", 2, 64, non_readers},
      {"false headers: 48 x 1 MiB claimed (good client: 1 MiB echo)", 2, MiB, false_headers},
  };
  for (const auto& sc : scenarios) run_scenario(sc, seconds);
  return any_failed ? 1 : 0;
}
