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

// `clients` must be connected; workers are spread over them round-robin. The first call
// error, if any, goes to `first_error`.
cell_result run_cell(const std::vector<rpc_client*>& clients, const cell_params& p,
                     const progress_fn& progress, std::string* first_error = nullptr);

// TCP segments this host has sent so far (/proc/net/snmp OutSegs), or -1 if unreadable. On
// loopback every segment is also received, so the delta over a run counts packets.
long long tcp_segments_sent();

}  // namespace corvid::bench
