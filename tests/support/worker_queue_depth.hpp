#pragma once
// How many calls wait in a server's worker queue (register_blocking_handler), read from
// its own /metrics text: what the blocking-handler, fairness and admission tests wait on to
// know a call is queued behind a busy worker, through the server's public interface only.
#include <cstddef>
#include <stdexcept>
#include <string>

#include <corvid/corvid.hpp>

namespace corvid::test {

// Throws when the metrics have no such line (the server has no worker pool): a test waiting
// on it would otherwise wait in vain.
inline std::size_t worker_queue_depth(const corvid::rpc_server& s) {
  const std::string text = s.metrics_text();
  const std::string key = "\ncorvid_server_worker_queue_depth ";
  const auto at = text.find(key);
  if (at == std::string::npos) throw std::runtime_error("no worker queue depth in the metrics");
  return std::stoul(text.substr(at + key.size()));
}

}  // namespace corvid::test
