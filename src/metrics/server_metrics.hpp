#pragma once
// The server's metrics, sharded by reactor: each reactor writes only its own shard (plain
// adds through single-writer counters, counter.hpp), a scrape sums the shards. Nothing here
// allocates per call: a method's stats are created on its first call on a reactor.
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "corvid/error.hpp"

#include "counter.hpp"
#include "latency_histogram.hpp"

namespace corvid::metrics {

// rpc_errc values, 0 (ok) included so a code indexes directly.
inline constexpr std::size_t errc_count = static_cast<std::size_t>(last_rpc_errc) + 1;

// One method on one reactor.
struct method_stats {
  // Requests dispatched to the handler: a plain handler's at its batch end (it has answered
  // by then), a coroutine's when it starts; latency.count() of them answered (the difference
  // is in flight).
  counter calls;
  counter request_bytes, reply_bytes;
  std::array<counter, errc_count> errors;
  latency_histogram latency;  // arrival of the request to its reply queued
};

class reactor_shard {
 public:
  // `methods` registered handlers, plus one slot for requests naming no handler.
  explicit reactor_shard(std::size_t methods);
  ~reactor_shard();
  reactor_shard(const reactor_shard&) = delete;
  reactor_shard& operator=(const reactor_shard&) = delete;

  // On the owning reactor. The first call of a method there creates its stats.
  method_stats& at(std::size_t method) {
    method_stats* s = slots_[method].load(std::memory_order_relaxed);
    if (s == nullptr) [[unlikely]]
      s = create(method);
    return *s;
  }
  // Any thread: null until the method was first called on this reactor.
  const method_stats* peek(std::size_t method) const noexcept {
    return slots_[method].load(std::memory_order_acquire);
  }
  std::size_t size() const noexcept { return size_; }

 private:
  [[gnu::cold]] method_stats* create(std::size_t method);
  std::size_t size_;
  std::unique_ptr<std::atomic<method_stats*>[]> slots_;
};

class server_metrics {
 public:
  server_metrics(std::vector<std::string> method_names, std::size_t reactors);

  std::size_t method_count() const noexcept { return names_.size(); }
  // The slot for requests whose function id has no handler.
  std::size_t unknown_method() const noexcept { return names_.size(); }
  const std::string& method_name(std::size_t i) const noexcept { return names_[i]; }
  reactor_shard& shard(std::size_t reactor) noexcept { return *shards_[reactor]; }
  const std::vector<std::unique_ptr<reactor_shard>>& shards() const noexcept { return shards_; }
  std::chrono::steady_clock::time_point started() const noexcept { return started_; }

 private:
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<reactor_shard>> shards_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace corvid::metrics
