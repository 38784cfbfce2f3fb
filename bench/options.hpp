#pragma once
// corvid-bench's command line.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <corvid/client/client_config.hpp>
#include <corvid/client/pool_config.hpp>
#include <corvid/rdma/ibv_config.hpp>
#include <corvid/runtime/io_pool.hpp>

namespace corvid::bench {

struct options {
  std::string command =
      "grid";  // grid | server | client | pipeline | coalesce | reactors | latency
  std::string transport = "tcp";  // tcp | uds | rdma
  bool tls = false;               // TLS on tcp/uds, with certificates made at run time
  std::string rdma_provider;      // rdma: "soft", "ibverbs", "" = $CORVID_VERBS_PROVIDER
  std::string rdma_device;        // rdma: device name, "" = the first
  std::uint8_t rdma_port = ibv_config{}.port;                 // rdma: 1-based, as ibv_devinfo
  std::uint8_t rdma_gid_index = ibv_config{}.gid_index;       // rdma: as ib_send_bw -x
  std::size_t rdma_chunk_size = ibv_config{}.chunk_size;      // rdma: registered chunk bytes
  std::size_t rdma_send_window = ibv_config{}.send_window;    // rdma: sends in flight
  std::size_t rdma_recv_buffers = ibv_config{}.recv_buffers;  // rdma: receives posted
  std::uint8_t rdma_ack_timeout = ibv_config{}.ack_timeout;   // rdma: 4.096 us x 2^N per try
  std::string listen;                                         // server: address to listen on
  std::string connect;  // client: address of a running `corvid-bench server`
  std::vector<std::size_t> sizes{128, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 8 << 20};
  std::vector<int> concurrency{1, 4, 16, 64, 256};
  std::size_t response_size = 16;
  bool echo = false;
  double duration = 3.0;  // seconds per cell
  double warmup = 0.5;
  int threads = 1;  // io threads per side
  // `server`: io threads and adaptive polling from server_config's defaults (usable_cpus():
  // affinity and cgroup CPU quota), each unless given by --threads / --adaptive-poll.
  bool library_defaults = false;
  bool threads_given = false, adaptive_poll_given = false;
  int connections = 1;  // client connections the calls are spread over
  int pool = 0;
  bool balancer = false;  // calls through a load_balancer over the pool --pool describes  // > 0:
                          // calls go through a client_pool of up to this many connections; -1: auto
  // pool_config::spread_in_flight of the bench's pools (the "after" rows of `reactors`).
  std::size_t spread = pool_config{}.spread_in_flight;
  bool metrics = true;          // server: server_config::metrics (--no-metrics turns it off)
  bool client_metrics = false;  // clients: client_config::metrics (--client-metrics)
  bool pin = true;              // pin server and client reactors to different cores
  // client_config::max_queued_request_bytes of the bench's clients (0 = unlimited).
  std::size_t client_queue = client_config{}.max_queued_request_bytes;
  std::string csv, json, plot;
  int calls = 20000;    // pipeline experiment
  int calls_first = 0;  // idle: echo calls each connection makes before it goes idle
  // server_config/client_config::busy_poll of the bench's server and clients (0 = off);
  // `latency` compares off with this budget (default there: 1000 us).
  std::chrono::microseconds busy_poll{0};
  // server_config::adaptive_poll of the bench's server, and of its clients' io_pool.
  std::chrono::microseconds adaptive_poll = io_pool::default_adaptive_poll;
  // `stream`: the clients' client_config::stream_window (0 = the library's default).
  std::size_t stream_window = 0;
  std::size_t max_stream_window = 0;  // client_config::max_stream_window (0 = the default)
  bool sockperf = true;               // latency: also run sockperf (--no-sockperf skips it)
  int rounds = 3;                     // latency: interleaved rounds, the median is reported
  // `discovery` (discovery_bench.cpp): server processes, keys, the etcd to register in ("" =
  // start one), and with --policy only that policy's calls (for callgrind: --calls of them).
  int servers = 4;
  int keys = 10000;
  std::string registry;
  std::string policy;
  // `discovery --flood N`: a balancer following N endpoints through a file (registry_flood.cpp).
  int flood = 0;
  std::string name;       // discovery-server: the instance's name, answered to lookups
  std::string auth_mode;  // `auth`, `auth-server`: one mode (auth_bench.cpp); "" = all
};

// The ibv_config --transport rdma uses: --rdma-provider/-device/-port/-gid-index over the
// defaults.
ibv_config rdma_config(const options& o);

// Parses argv; on error or --help prints usage and exits.
options parse_options(int argc, char** argv);

}  // namespace corvid::bench
