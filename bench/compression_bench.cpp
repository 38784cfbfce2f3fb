// corvid-bench compression: per-message zstd on loopback. One in-process server (one io
// thread), one client connection, C callers echoing a payload for --duration seconds per row:
// JSON-like (compressible) and random (incompressible) payloads of 4 KiB, 64 KiB and 1 MiB,
// each with client_config::compression off and on. Reports calls/s, the process's CPU time
// per call (both sides: they share the process) and the bytes on the wire per call (both
// directions, frame headers included).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string>
#include <thread>

#include <corvid/corvid.hpp>

#include "experiments.hpp"

namespace corvid::bench {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::string zecho(std::string s) { return s; }

std::string json_like(std::size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) {
    s += "{\"id\":" + std::to_string(i) + ",\"user\":\"user" + std::to_string(i % 97) +
         "\",\"active\":" + (i % 3 == 0 ? "true" : "false") +
         ",\"score\":" + std::to_string((i * 7919) % 1000) + "},";
  }
  s.resize(n);
  return s;
}

std::string random_bytes(std::size_t n) {
  std::string s(n, '\0');
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return s;
}

double cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

detail::detached caller(rpc_client& c, const std::string& payload, steady::time_point end,
                        std::atomic<std::uint64_t>& calls, std::atomic<std::uint64_t>& failed,
                        std::atomic<int>& left) {
  while (steady::now() < end) {
    auto r = co_await c.call<zecho>(payload);
    if (!r || r->size() != payload.size()) {
      failed.fetch_add(1, std::memory_order_relaxed);
    } else {
      calls.fetch_add(1, std::memory_order_relaxed);
    }
  }
  left.fetch_sub(1);
}

}  // namespace

int run_compression_experiment(const options& o) {
  const int callers = o.concurrency.empty() ? 4 : o.concurrency.front();
  server_config sc;
  sc.address = "127.0.0.1";
  sc.io_threads = 1;
  sc.max_frame_size = 4u << 20;
  rpc_server server(sc);
  server.register_handler<zecho>();
  if (auto e = server.async_start()) throw std::runtime_error(e.message());
  const std::string endpoint = "127.0.0.1:" + std::to_string(server.port());
  std::printf(
      "compression: zstd level 1 from 4 KiB, 1 server io thread, 1 connection, %d callers, "
      "%.1f s per row\n",
      callers, o.duration);
  std::printf("%-8s %8s %5s %10s %10s %14s %8s %7s\n", "payload", "size", "zstd", "calls/s", "MB/s",
              "wire B/call", "ratio", "CPU us");
  for (const bool text : {true, false}) {
    for (const std::size_t size :
         {std::size_t{4} << 10, std::size_t{64} << 10, std::size_t{1} << 20}) {
      const std::string payload = text ? json_like(size) : random_bytes(size);
      for (const bool on : {false, true}) {
        client_config cc;
        cc.compression.enabled = on;
        cc.max_frame_size = 4u << 20;
        rpc_client client(cc);
        if (auto e = sync_wait(client.connect(endpoint))) throw std::runtime_error(e.message());
        (void)sync_wait(client.call<zecho>(std::string("negotiate")));
        const auto before = client.stats();
        const double cpu0 = cpu_seconds();
        std::atomic<std::uint64_t> calls{0}, failed{0};
        std::atomic<int> left{callers};
        const auto t0 = steady::now();
        const auto end = t0 + std::chrono::duration_cast<steady::duration>(
                                  std::chrono::duration<double>(o.duration));
        for (int i = 0; i < callers; ++i) caller(client, payload, end, calls, failed, left);
        while (left.load() > 0) std::this_thread::sleep_for(5ms);
        const double secs = std::chrono::duration<double>(steady::now() - t0).count();
        const double cpu = cpu_seconds() - cpu0;
        const auto after = client.stats();
        const double n = static_cast<double>(std::max<std::uint64_t>(calls.load(), 1));
        const double wire = static_cast<double>((after.bytes_sent - before.bytes_sent) +
                                                (after.bytes_received - before.bytes_received)) /
                            n;
        std::printf("%-8s %7zuK %5s %10.0f %10.1f %14.0f %8.2f %7.1f%s\n", text ? "json" : "random",
                    size >> 10, on ? "on" : "off", n / secs, n * 2.0 * size / secs / 1e6, wire,
                    2.0 * size / wire, cpu / n * 1e6, failed.load() != 0 ? "  (calls failed)" : "");
      }
    }
  }
  return 0;
}

}  // namespace corvid::bench
