#pragma once
// Where a source's rejections go: counted into the balancer's client metrics
// (lb_config::pool.client.metrics, corvid_discovery_rejected_total{reason}) when it has them,
// and written to stderr once per key while that key stays rejected for the same reason, so
// a bad registry entry is one line, not one per watch event or file re-read.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "corvid/client/lb_config.hpp"

#include "../metrics/client_registry.hpp"
#include "rejection.hpp"

namespace corvid::discovery {

class rejection_log {
 public:
  // `origin`: the source's URL, named in each line.
  rejection_log(const lb_config& config, std::string origin);

  // `key`: the registry key, file line or name the entry came from.
  void reject(std::string_view key, const rejection& r);
  // Entries turned away without a key of their own (counted, one line each call).
  void reject_many(metrics::discovery_reject reason, std::uint64_t n, std::string_view detail);
  // The key is accepted again, or gone: a later rejection of it is written again.
  void clear(std::string_view key);
  // A full read (a range, a file) starts: keys not rejected again by end_round() are cleared.
  void begin_round();
  void end_round();

 private:
  struct entry {
    metrics::discovery_reject reason;
    std::uint64_t round;
  };
  std::shared_ptr<client_metrics> metrics_;  // keeps registry_ alive
  metrics::client_registry* registry_ = nullptr;
  const std::string origin_;
  const std::size_t max_keys_;  // keys remembered; past it rejections are counted, not written
  std::mutex mutex_;
  std::map<std::string, entry, std::less<>> logged_;
  std::uint64_t round_ = 0;
  bool said_quiet_ = false;
};

}  // namespace corvid::discovery
