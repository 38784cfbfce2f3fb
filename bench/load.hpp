#pragma once
// Runs one benchmark cell: `concurrency` coroutines keep one call each in flight over the
// given connections for warm-up + duration, and the cell's figures come back.
#include <functional>
#include <string>
#include <vector>

#include <corvid/corvid.hpp>

#include "report.hpp"

namespace corvid::bench {

struct cell_params {
  std::size_t payload = 128;
  std::size_t response_size = 16;
  bool echo = false;
  int concurrency = 1;
  double warmup_seconds = 0.5;
  double duration_seconds = 3.0;
};

// Called about twice a second while a cell runs, with the current qps.
using progress_fn = std::function<void(double qps)>;

// Where the calls go: connected clients (workers spread round-robin), or a pool.
struct load_target {
  std::vector<rpc_client*> clients;
  client_pool* pool = nullptr;  // if set, every call goes through it (clients unused)
  // With a pool: the client's reactors, where the callers start in turn (as callers living on
  // the client's threads do); null: they start on the calling thread.
  io_pool* reactors = nullptr;
  // If set, every call goes through it (clients and pool unused; reactors as for a pool).
  load_balancer* balancer = nullptr;
};

// Runs one cell against `target`. The first call error, if any, goes to `first_error`.
// With a pool, each client thread records its callers' figures apart (callers move between
// threads with the connections they are handed), and the client's RPCs per write is not
// measured.
cell_result run_cell(const load_target& target, const cell_params& p, const progress_fn& progress,
                     std::string* first_error = nullptr);

// TCP segments this host has sent so far (/proc/net/snmp OutSegs), or -1 if unreadable. On
// loopback every segment is also received, so the delta over a run counts packets.
long long tcp_segments_sent();

}  // namespace corvid::bench
