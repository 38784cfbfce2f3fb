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
  // were read. It joins the batch's tally (consecutive calls of one method share an entry),
  // summed into the shard with one clock read at the batch end: a plain handler has answered
  // by then. A coroutine call is taken out of the tally when it starts (call_started).
  [[gnu::always_inline]] void begin(std::size_t method, std::uint64_t request_id,
                                    std::size_t request_bytes, time_point arrived) {
    if (shard_ == nullptr) return;
    method_stats* s = &shard_->at(method != no_method ? method : shard_->size() - 1);
    batch_entry* e = last_;
    if (e == nullptr || e->stats != s) [[unlikely]]
      e = new_entry(s, arrived);
    ++e->calls;
    e->request_bytes += request_bytes;
    current_ = s;
    current_id_ = request_id;
    current_request_bytes_ = request_bytes;
  }
  // The handler returned to dispatch.
  void end_dispatch() noexcept { current_ = nullptr; }
  // The call being dispatched was not: it waits and will begin again.
  void withdraw() noexcept {
    if (current_ == nullptr) return;
    --last_->calls;
    last_->request_bytes -= current_request_bytes_;
    current_ = nullptr;
  }
  // The stats of the call being dispatched if it is `request_id`, else null.
  method_stats* dispatching(std::uint64_t request_id) noexcept {
    return current_ != nullptr && current_id_ == request_id ? current_ : nullptr;
  }
  // The call being dispatched is a coroutine that goes on: counted now (in flight until it
  // ends), timed by its end.
  void call_started() noexcept {
    bump(conn_.calls_in_flight, 1);
    if (current_ == nullptr) return;
    --last_->calls;
    last_->request_bytes -= current_request_bytes_;
    current_->calls.add();
    current_->request_bytes.add(current_request_bytes_);
  }
  void call_finished(method_stats* s, time_point arrived) noexcept {
    bump(conn_.calls_in_flight, -1);
    conn_.calls.add();
    if (s == nullptr) return;
    s->latency.record(elapsed_ns(arrived, std::chrono::steady_clock::now()));
  }
  // Counts the calls answered during this batch; `now` read by the caller, or {} to read it.
  void end_batch(time_point now) noexcept {
    if (last_ != nullptr) flush_batch(now);
  }
  static void error(method_stats* s, rpc_errc code) noexcept {
    if (s != nullptr) s->errors[static_cast<std::size_t>(code) % errc_count].add();
  }
  // A success reply of `bytes` to the call whose stats are `s`.
  void reply(method_stats* s, std::size_t bytes) noexcept {
    if (s == nullptr) return;
    if (s == current_) {
      last_->reply_bytes += bytes;  // counted with its call's batch entry
    } else {
      s->reply_bytes.add(bytes);  // a coroutine call answering later
    }
  }
  void received(std::size_t n) noexcept { conn_.bytes_received.add(n); }
  void sent(std::size_t n) noexcept { conn_.bytes_sent.add(n); }

 private:
  static std::uint64_t elapsed_ns(time_point from, time_point to) noexcept {
    const auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
    return d > 0 ? static_cast<std::uint64_t>(d) : 0;
  }
  struct batch_entry;
  // begin's other case: the batch's first call, or another method than the last one's.
  [[gnu::noinline]] batch_entry* new_entry(method_stats* s, time_point arrived) noexcept;
  [[gnu::noinline]] void flush_batch(time_point now) noexcept;
  static void bump(std::atomic<std::uint32_t>& v, int by) noexcept {
    v.store(v.load(std::memory_order_relaxed) + static_cast<std::uint32_t>(by),
            std::memory_order_relaxed);
  }
  // Plain handlers' calls answered in this batch, by method, summed into the shard at its
  // end: one add per method and batch instead of one per call.
  struct batch_entry {
    method_stats* stats;
    time_point arrived;
    std::uint64_t calls, request_bytes, reply_bytes;
  };
  static constexpr std::size_t pending_capacity = 16;
  reactor_shard* shard_ = nullptr;
  method_stats* current_ = nullptr;  // the call being dispatched
  std::uint64_t current_id_ = 0;
  std::size_t current_request_bytes_ = 0;
  batch_entry* last_ = nullptr;  // the batch's last entry, or null
  std::size_t pending_count_ = 0;
  batch_entry pending_[pending_capacity];
  connection_stats conn_;
};

}  // namespace corvid::metrics
