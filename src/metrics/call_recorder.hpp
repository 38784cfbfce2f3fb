#pragma once
// One server connection's link to the metrics: counts each call into its reactor's shard.
// The latency of calls answered during dispatch is taken with one clock read per batch (the
// batch end, when their replies leave), not one per call; coroutine calls read the clock
// when they finish. Off (no shard) every hook is one predictable branch.
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "connection_stats.hpp"
#include "server_metrics.hpp"

namespace corvid::metrics {

class call_recorder {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  void attach(reactor_shard* shard) noexcept { shard_ = shard; }
  bool on() const noexcept { return shard_ != nullptr; }
  connection_stats& connection() noexcept { return conn_; }
  const connection_stats& connection() const noexcept { return conn_; }
  reactor_shard* shard() noexcept { return shard_; }

  // The method index of a request naming no registered function.
  static constexpr std::size_t no_method = ~std::size_t{0};

  // Dispatching a request to `method` (a handler_entry's index); `arrived`: when its bytes
  // were read.
  void begin(std::size_t method, std::uint64_t request_id, std::size_t request_bytes,
             time_point arrived) {
    if (shard_ == nullptr) return;
    current_ = &shard_->at(method != no_method ? method : shard_->size() - 1);
    current_id_ = request_id;
    arrived_ = arrived;
    went_async_ = false;
    current_->calls.add();
    current_->request_bytes.add(request_bytes);
    conn_.calls.add();
  }
  // The handler returned to dispatch: a plain handler has answered (its latency is taken at
  // the batch end); a coroutine one went on (call_started) and is timed by its end.
  void end_dispatch() noexcept {
    if (current_ == nullptr) return;
    if (!went_async_) {
      pending_[pending_count_++] = current_;
      if (pending_count_ == pending_capacity) end_batch({});
    }
    current_ = nullptr;
  }
  // The stats of the call being dispatched if it is `request_id`, else null.
  method_stats* dispatching(std::uint64_t request_id) noexcept {
    return current_ != nullptr && current_id_ == request_id ? current_ : nullptr;
  }
  // A coroutine call started during dispatch; returns when the request arrived.
  time_point call_started() noexcept {
    went_async_ = true;
    conn_.calls_in_flight.store(conn_.calls_in_flight.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
    return arrived_;
  }
  void call_finished(method_stats* s, time_point arrived) noexcept {
    conn_.calls_in_flight.store(conn_.calls_in_flight.load(std::memory_order_relaxed) - 1,
                                std::memory_order_relaxed);
    if (s == nullptr) return;
    s->latency.record(elapsed_ns(arrived, std::chrono::steady_clock::now()));
    s->completed.add();
  }
  // The calls answered during this batch; `now` read by the caller, or {} to read it here.
  void end_batch(time_point now) noexcept {
    if (pending_count_ == 0) return;
    if (now == time_point{}) now = std::chrono::steady_clock::now();
    const std::uint64_t ns = elapsed_ns(arrived_, now);
    for (std::size_t i = 0; i < pending_count_; ++i) {
      pending_[i]->latency.record(ns);
      pending_[i]->completed.add();
    }
    pending_count_ = 0;
  }
  static void error(method_stats* s, rpc_errc code) noexcept {
    if (s != nullptr) s->errors[static_cast<std::size_t>(code) % errc_count].add();
  }
  static void reply(method_stats* s, std::size_t bytes) noexcept {
    if (s != nullptr) s->reply_bytes.add(bytes);
  }
  void received(std::size_t n) noexcept { conn_.bytes_received.add(n); }
  void sent(std::size_t n) noexcept { conn_.bytes_sent.add(n); }

 private:
  static std::uint64_t elapsed_ns(time_point from, time_point to) noexcept {
    const auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
    return d > 0 ? static_cast<std::uint64_t>(d) : 0;
  }
  static constexpr std::size_t pending_capacity = 64;
  reactor_shard* shard_ = nullptr;
  method_stats* current_ = nullptr;
  std::uint64_t current_id_ = 0;
  time_point arrived_{};
  bool went_async_ = false;
  std::size_t pending_count_ = 0;
  method_stats* pending_[pending_capacity];
  connection_stats conn_;
};

}  // namespace corvid::metrics
