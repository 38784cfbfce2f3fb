#include "options.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

namespace corvid::bench {
namespace {

constexpr const char* usage = R"(corvid-bench [command] [options]

commands:
  grid        (default) payload x concurrency grid, server and client in this process
  server      run only the server: --listen ADDR (host:port or unix:/path)
  client      run the grid against a running server: --connect ADDR
  pipeline    seed 001: synchronous vs pipelined vs concurrent callers on one connection
  coalesce    seed 002: write coalescing on vs off (RPCs per write, packets per RPC)
  reactors    seed 003: server and client on T = 1, 2, 4 .. CPUs/2 io threads each (own CPUs),
              calls/s per server reactor and efficiency against T = 1, plain connections
              and the default client_pool; then one client_pool (old rule vs default) against a 2-io-thread server,
              calls per server reactor (--concurrency, default 1,4,16,64,256); with
              --pool (any value) only the client_pool rows
  idle        user-space bytes per idle server connection (--connections N, default 10000;
              --calls-first K: each makes K small echo calls first, then goes idle)
  stream      server-streamed items (128B, 4K, 1M; 1 and 64 streams) vs unary calls
  discovery   N server processes registered in etcd (--servers, default 4), one client
              balancing by key (consistent_hash, --keys distinct keys) vs a fixed list
              (round robin): qps at the first --concurrency, key spread, keys remapped when
              one server leaves. --registry etcd://host:port (default: start an etcd);
              --policy consistent_hash|round_robin --calls N: only N such calls (callgrind)
              --flood N: a balancer following N endpoints (--servers real ones, the rest
              refusing): open() time, RSS, call latency while updates rebuild its view
  latency     c=1 P50/P99: polling off, busy-poll, adaptive poll, beside sockperf's
              blocking and spinning round trips (first --sizes entry, echoed; --rounds
              interleaved, median)
  blocking-fairness
              a newcomer's blocking call (returns at once) on 2 worker threads, alone and
              while 2 connections pipeline 1024 calls of a 500 ms blocking handler each
              (--rounds newcomers, default 3)
  pool        calls/s through one client_pool (--pool N|auto, default auto) vs as many plain
              connections as its cap (or --connections), server and client each on --threads
              io threads; 128 B and 4 KiB, c=16,64,256,1024 unless --sizes/--concurrency
              (--rounds interleaved, median)
  hedging     call policies: 4 servers, 1 % of calls stall 50 ms; P50/P99/P99.9 and the extra
              load with hedging off, after fixed delays and after the method's p95
              (first --concurrency callers, default 16; --duration per row)
  retry-budget
              4 servers, one refusing every call; 3 attempts with and without a budget:
              success rate and attempts per call
  compression per-message zstd on loopback: JSON-like and random payloads of 4 KiB, 64 KiB
              and 1 MiB echoed with compression off and on; calls/s, wire bytes per call
              and CPU per call (first --concurrency callers, default 4; --duration per row)
  auth        call metadata, interceptors and refusals: calls/s and allocations per call on
              each side for plain calls, 2 metadata entries, a sync interceptor, an
              authorization_policy with a bearer token, an async interceptor, calls refused
              by an interceptor and calls to an unregistered function (c=1,64 unless
              --concurrency; --rounds interleaved, median); --auth-mode M: only that mode;
              with --connect: only the client of --auth-mode against an `auth-server`
  auth-server serve one --auth-mode alone: --listen ADDR (for bench/callgrind-auth)

options:
  --transport tcp|uds|rdma transport (default tcp); rdma = init_ibv() on both sides
  --tls                    TLS (tcp, uds), self-signed certificates made at run time
  --rdma-provider P        soft | ibverbs (default: $CORVID_VERBS_PROVIDER, else ibverbs)
  --rdma-device NAME       RDMA device (default: the first)
  --rdma-port N            the device's port, 1-based as ibv_devinfo shows it (default 1)
  --rdma-gid-index N       GID table index (default 0); RoCE v2: the IPv4 entry of show_gids,
                           the same index as ib_send_bw -x
  --rdma-chunk-size BYTES  registered chunk size, the largest single SEND (default 256K)
  --rdma-send-window N     sends in flight per connection (default 2)
  --rdma-recv-buffers N    receives kept posted per connection (default 8)
  --rdma-ack-timeout N     ACK timeout per try, 4.096 us x 2^N, 0..31 (default 14, ~67 ms;
                           Soft-RoCE under load: 18)
  --sizes 128,4K,...       payload sizes (default 128,4K,32K,256K,1M,8M)
  --concurrency 1,4,...    calls in flight (default 1,4,16,64,256)
  --duration S             measured seconds per cell (default 3)
  --warmup S               warm-up seconds per cell (default 0.5)
  --response-size N        reply attachment bytes (default 16)
  --echo                   reply with the request payload instead
  --threads N              io threads per side (default 1)
  --library-defaults       `server`: io threads and adaptive polling from server_config's
                           defaults (the CPUs the process may use: affinity, cgroup quota),
                           each unless --threads / --adaptive-poll gives it
  --connections N          client connections (default 1: one multiplexed connection)
  --pool N|auto            send calls through a client_pool of up to N connections (auto:
                           pool_config's default, one per server reactor, at least 4)
  --balancer               send calls through a load_balancer on list://<server> whose pool
                           is the one --pool describes (auto when --pool is not given)
  --spread N               pools' spread_in_flight (default 8; 0 = the old rule)
  --no-metrics             server: run with server_config::metrics off
  --client-metrics         clients: count into a client_metrics (client_config::metrics)
  --no-pin                 do not pin server/client reactors to separate cores
  --client-queue BYTES     clients' max_queued_request_bytes (default 64M; 0 = unlimited)
  --calls N                calls per mode in `pipeline` (default 20000)
  --busy-poll US           reactors spin up to US microseconds before sleeping (default 0 =
                           off; `latency`: the budget of its "on" rows, default 1000)
  --adaptive-poll US       reactors poll up to US microseconds (learned) before sleeping
                           while events arrive that soon (default 100; 0 = off)
  --rounds N               `latency`: interleaved rounds (default 3)
  --stream-window BYTES    `stream`: the client's per-stream credit window (default 256K)
  --max-stream-window BYTES
                           `stream`: how far that window may grow (default 4M; the window
                           itself = fixed)
  --no-sockperf            `latency`: skip the sockperf rows
  --auth-mode M            `auth`, `auth-server`: plain | metadata | interceptor | policy |
                           async | refused | not-found
  --servers N --keys N --registry URL --policy P --flood N
                           `discovery` (see above)
  --csv FILE --json FILE --plot FILE.png
)";

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "corvid-bench: %s\n\n%s", why.c_str(), usage);
  std::exit(2);
}

std::size_t parse_size(std::string_view s) {
  std::size_t mult = 1;
  if (!s.empty() && (s.back() == 'K' || s.back() == 'k')) mult = 1 << 10;
  if (!s.empty() && (s.back() == 'M' || s.back() == 'm')) mult = 1 << 20;
  if (mult != 1) s.remove_suffix(1);
  if (!s.empty() && (s.back() == 'B' || s.back() == 'b')) s.remove_suffix(1);
  char* end = nullptr;
  const std::string str(s);
  const unsigned long long v = std::strtoull(str.c_str(), &end, 10);
  if (str.empty() || *end != '\0') fail("bad size '" + str + "'");
  return static_cast<std::size_t>(v) * mult;
}

template <class T, class Parse>
std::vector<T> parse_list(const std::string& s, Parse parse) {
  std::vector<T> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(static_cast<T>(parse(item)));
  if (out.empty()) fail("empty list '" + s + "'");
  return out;
}

std::uint8_t parse_u8(const std::string& s, const char* name, unsigned min) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < min || v > 255) {
    fail(std::string(name) + " must be " + std::to_string(min) + "..255");
  }
  return static_cast<std::uint8_t>(v);
}

}  // namespace

ibv_config rdma_config(const options& o) {
  ibv_config c;
  c.provider = o.rdma_provider;
  c.device_name = o.rdma_device;
  c.port = o.rdma_port;
  c.gid_index = o.rdma_gid_index;
  c.chunk_size = o.rdma_chunk_size;
  c.send_window = o.rdma_send_window;
  c.recv_buffers = o.rdma_recv_buffers;
  c.ack_timeout = o.rdma_ack_timeout;
  return c;
}

options parse_options(int argc, char** argv) {
  options o;
  int i = 1;
  if (i < argc && argv[i][0] != '-') o.command = argv[i++];
  auto value = [&](const char* name) -> std::string {
    if (i + 1 >= argc) fail(std::string(name) + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    } else if (a == "--transport") {
      o.transport = value("--transport");
    } else if (a == "--tls") {
      o.tls = true;
    } else if (a == "--rdma-provider") {
      o.rdma_provider = value("--rdma-provider");
    } else if (a == "--rdma-device") {
      o.rdma_device = value("--rdma-device");
    } else if (a == "--rdma-port") {
      o.rdma_port = parse_u8(value("--rdma-port"), "--rdma-port", 1);
    } else if (a == "--rdma-chunk-size") {
      o.rdma_chunk_size = parse_size(value("--rdma-chunk-size"));
    } else if (a == "--rdma-send-window") {
      o.rdma_send_window = parse_size(value("--rdma-send-window"));
    } else if (a == "--rdma-recv-buffers") {
      o.rdma_recv_buffers = parse_size(value("--rdma-recv-buffers"));
    } else if (a == "--rdma-ack-timeout") {
      o.rdma_ack_timeout = parse_u8(value("--rdma-ack-timeout"), "--rdma-ack-timeout", 0);
    } else if (a == "--rdma-gid-index") {
      o.rdma_gid_index = parse_u8(value("--rdma-gid-index"), "--rdma-gid-index", 0);
    } else if (a == "--listen") {
      o.listen = value("--listen");
    } else if (a == "--connect") {
      o.connect = value("--connect");
    } else if (a == "--sizes") {
      o.sizes = parse_list<std::size_t>(value("--sizes"), parse_size);
    } else if (a == "--concurrency") {
      o.concurrency = parse_list<int>(value("--concurrency"), parse_size);
    } else if (a == "--duration") {
      o.duration = std::atof(value("--duration").c_str());
    } else if (a == "--warmup") {
      o.warmup = std::atof(value("--warmup").c_str());
    } else if (a == "--response-size") {
      o.response_size = parse_size(value("--response-size"));
    } else if (a == "--echo") {
      o.echo = true;
    } else if (a == "--library-defaults") {
      o.library_defaults = true;
    } else if (a == "--threads") {
      o.threads = std::atoi(value("--threads").c_str());
      o.threads_given = true;
    } else if (a == "--connections") {
      o.connections = std::atoi(value("--connections").c_str());
    } else if (a == "--pool") {
      const std::string v = value("--pool");
      o.pool = v == "auto" ? -1 : std::atoi(v.c_str());
    } else if (a == "--balancer") {
      o.balancer = true;
    } else if (a == "--spread") {
      o.spread = static_cast<std::size_t>(std::atoi(value("--spread").c_str()));
    } else if (a == "--client-queue") {
      o.client_queue = parse_size(value("--client-queue"));
    } else if (a == "--no-metrics") {
      o.metrics = false;
    } else if (a == "--client-metrics") {
      o.client_metrics = true;
    } else if (a == "--no-pin") {
      o.pin = false;
    } else if (a == "--calls-first") {
      o.calls_first = std::atoi(value("--calls-first").c_str());
    } else if (a == "--calls") {
      o.calls = std::atoi(value("--calls").c_str());
    } else if (a == "--busy-poll") {
      const long us = std::atol(value("--busy-poll").c_str());
      if (us < 0) fail("--busy-poll must be >= 0 microseconds");
      o.busy_poll = std::chrono::microseconds(us);
    } else if (a == "--adaptive-poll") {
      const long us = std::atol(value("--adaptive-poll").c_str());
      if (us < 0) fail("--adaptive-poll must be >= 0 microseconds");
      o.adaptive_poll = std::chrono::microseconds(us);
      o.adaptive_poll_given = true;
    } else if (a == "--stream-window") {
      o.stream_window = static_cast<std::size_t>(std::atoll(value("--stream-window").c_str()));
    } else if (a == "--max-stream-window") {
      o.max_stream_window =
          static_cast<std::size_t>(std::atoll(value("--max-stream-window").c_str()));
    } else if (a == "--servers") {
      o.servers = std::atoi(value("--servers").c_str());
      if (o.servers < 2) fail("--servers must be at least 2");
    } else if (a == "--keys") {
      o.keys = std::atoi(value("--keys").c_str());
      if (o.keys < 1) fail("--keys must be positive");
    } else if (a == "--registry") {
      o.registry = value("--registry");
    } else if (a == "--policy") {
      o.policy = value("--policy");
      if (o.policy != "consistent_hash" && o.policy != "round_robin")
        fail("--policy is consistent_hash or round_robin");
    } else if (a == "--flood") {
      o.flood = std::atoi(value("--flood").c_str());
      if (o.flood < 1) fail("--flood must be positive");
    } else if (a == "--auth-mode") {
      o.auth_mode = value("--auth-mode");
    } else if (a == "--name") {
      o.name = value("--name");
    } else if (a == "--rounds") {
      o.rounds = std::atoi(value("--rounds").c_str());
      if (o.rounds < 1) fail("--rounds must be positive");
    } else if (a == "--no-sockperf") {
      o.sockperf = false;
    } else if (a == "--csv") {
      o.csv = value("--csv");
    } else if (a == "--json") {
      o.json = value("--json");
    } else if (a == "--plot") {
      o.plot = value("--plot");
    } else {
      fail("unknown option '" + std::string(a) + "'");
    }
  }
  if (o.transport != "tcp" && o.transport != "uds" && o.transport != "rdma") {
    fail("--transport must be tcp, uds or rdma");
  }
  if (o.tls && (o.transport == "rdma" || !o.connect.empty() || o.command == "server")) {
    fail("--tls runs the server in this process, over tcp or uds");
  }
  if (o.balancer && o.pool == 0) o.pool = -1;
  if (o.transport == "rdma" && o.pool != 0) fail("--pool is not supported with --transport rdma");
  if (o.threads < 1 || o.connections < 1 || o.duration <= 0 || o.warmup < 0) {
    fail("--threads, --connections and --duration must be positive");
  }
  return o;
}

}  // namespace corvid::bench
