#pragma once
// One client connection's link to the client metrics (client_config::metrics): counts each
// call into the connection's own method stats. Every hook runs under the connection's lock,
// which makes its holder the stats' single writer: plain adds, no locked instruction. A scrape
// sums the connections (client_registry); a connection that dies is folded into its totals.
// The times are ones the connection reads anyway: the submission's clock read (the call's
// deadline) and the read batch's (the reply's arrival). Off (no registry) every hook is one
// predictable branch.
//
// The hooks take the call as a template parameter (the client's detail::call_base: anything
// with `client_method_stats* call_stats` and `steady_clock::time_point submitted_at`), so that
// src/metrics never includes the client it serves (docs/architecture.md, "Folders").
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <string_view>

#include "corvid/error.hpp"

#include "client_method_table.hpp"

namespace corvid::metrics {

class client_registry;

// What a hook needs of a call: where its stats and its submission time are kept.
template <class Call>
concept recorded_call = requires(Call& c) {
  { c.call_stats } -> std::convertible_to<client_method_stats*>;
  c.call_stats = static_cast<client_method_stats*>(nullptr);
  c.submitted_at = std::chrono::steady_clock::time_point{};
};

class client_recorder {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // Lists the connection with `registry` (null: off) until it is destroyed.
  explicit client_recorder(client_registry* registry);
  ~client_recorder();
  client_recorder(const client_recorder&) = delete;
  client_recorder& operator=(const client_recorder&) = delete;

  bool on() const noexcept { return registry_ != nullptr; }

  // A call of `function_id` submitted at `now`: counted (in flight until it ends).
  template <recorded_call Call>
  void submitted(Call& call, std::uint32_t function_id, std::string_view name, time_point now) {
    if (registry_ == nullptr) return;
    client_method_stats* s = table_.find(function_id);
    if (s == nullptr) [[unlikely]]
      s = create(function_id, name);
    s->calls.add();
    call.call_stats = s;
    call.submitted_at = now;
  }
  // Its request of `bytes` (arguments and attachment) was queued or parked.
  template <recorded_call Call>
  static void queued(Call& call, std::size_t bytes) noexcept {
    if (call.call_stats != nullptr) call.call_stats->request_bytes.add(bytes);
  }
  // It ended with `code` at `now`; `reply_bytes`: the success reply's frame. Counted once.
  template <recorded_call Call>
  static void ended(Call& call, rpc_errc code, std::size_t reply_bytes, time_point now) noexcept {
    client_method_stats* s = call.call_stats;
    if (s == nullptr) return;
    call.call_stats = nullptr;
    if (code == rpc_errc::ok) {
      s->reply_bytes.add(reply_bytes);
    } else {
      // A code this build does not know (a newer server's) counts as a protocol error.
      const auto c = static_cast<std::size_t>(code);
      s->errors[c < errc_count ? c : static_cast<std::size_t>(rpc_errc::protocol_error)].add();
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - call.submitted_at);
    s->latency.record(ns.count() > 0 ? static_cast<std::uint64_t>(ns.count()) : 0);
  }
  // Refused at submission: its result was there at once.
  template <recorded_call Call>
  static void refused(Call& call, rpc_errc code) noexcept {
    ended(call, code, 0, call.submitted_at);
  }

  // A connect attempt ended; the connection is open (or no longer).
  void connected(bool ok) noexcept;
  void set_open(bool open) noexcept { open_.store(open, std::memory_order_relaxed); }

  // For scrapes, under the registry's mutex.
  const client_method_table& table() const noexcept { return table_; }
  bool open() const noexcept { return open_.load(std::memory_order_relaxed); }

 private:
  [[gnu::cold]] client_method_stats* create(std::uint32_t function_id, std::string_view name);
  client_registry* registry_;
  client_method_table table_;
  std::atomic<bool> open_{false};
};

}  // namespace corvid::metrics
