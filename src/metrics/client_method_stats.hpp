#pragma once
// One method's calls on one client connection. Written under the connection's lock (at
// submission, on the caller's thread) or on its reactor with that lock held (at the end), so
// one writer at a time: single-writer counters (counter.hpp), read by scrapes on any thread.
#include <array>
#include <cstdint>
#include <string>

#include "counter.hpp"
#include "latency_histogram.hpp"
#include "server_metrics.hpp"

namespace corvid::metrics {

struct client_method_stats {
  explicit client_method_stats(std::uint32_t function_id, std::string method_name)
      : id(function_id), name(std::move(method_name)) {}
  const std::uint32_t id;  // protocol::function_id of the method
  const std::string name;  // its qualified name, the `method` label
  counter calls;           // submitted; latency.count() of them have ended
  // As the server counts them: request payload (arguments and attachment) queued; success
  // reply frames (header, result and attachment) received.
  counter request_bytes, reply_bytes;
  std::array<counter, errc_count> errors;  // calls ended with each rpc_errc
  latency_histogram latency;               // submission to result available
};

}  // namespace corvid::metrics
