#pragma once
// The load the fault tests and the soak drive through a client_pool, and the bookkeeping that
// proves corvid's promise under faults: every call ends (value or error) within its bound, no
// call gets another call's reply or a damaged one, and the client recovers once the path does.
//
// Each call echoes a payload unique to it (its id and size in the first 16 bytes, then bytes
// derived from the id), so a reply meant for another call, or a corrupted one, is recognised.
// Each worker thread makes one call at a time with sync_wait, so a call that never ends shows
// as a worker stuck in it: the watchdog counts such calls as lost.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <corvid/corvid.hpp>

#include "slowdown.hpp"

namespace corvid_fault {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// The RPCs the fault server registers.
inline std::string_view echo(std::string_view s) { return s; }
// Bytes the process's heap holds in live allocations (malloc's arenas plus mmapped blocks),
// which, unlike RSS, does not include memory malloc keeps free for reuse.
inline std::uint64_t heap_in_use() {
  const auto m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}
// Answers its argument and sends the request attachment back as the reply attachment.
inline std::string_view echo_attachment(corvid::request_context& ctx, std::string_view s) {
  ctx.set_response_attachment(ctx.request_attachment());
  return s;
}

// The payload of call `id`: id and size little-endian, then splitmix64 bytes seeded by id.
inline std::string make_payload(std::uint64_t id, std::size_t size) {
  if (size < 16) size = 16;
  std::string p(size, '\0');
  const std::uint64_t sz = size;
  std::memcpy(p.data(), &id, 8);
  std::memcpy(p.data() + 8, &sz, 8);
  std::uint64_t x = id * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 16; i < size; i += 8) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(p.data() + i, &z, std::min<std::size_t>(8, size - i));
  }
  return p;
}
inline std::uint64_t payload_id(std::string_view p) {
  std::uint64_t id = 0;
  if (p.size() >= 8) std::memcpy(&id, p.data(), 8);
  return id;
}

struct load_options {
  std::string endpoint;
  int workers = 8;
  std::size_t min_size = 16, max_size = 4096;  // drawn log-uniformly
  std::chrono::milliseconds call_timeout{1000};
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds backoff_max{500};
  std::size_t pool_connections = 2;
  // A call must end within bound() (late otherwise); one still running after lost_after is lost.
  // margin covers what no timer bounds: timer and thread wake-ups on a loaded machine.
  std::chrono::milliseconds margin{250};
  std::chrono::milliseconds lost_after{20000};
  // Every this many calls a worker drops its pool and makes a new one (0 = shared pool only).
  int churn_every = 0;

  // The pool may have to connect first (connect_timeout), then the call's own deadline runs
  // (call_timeout). A call retried because its request was never sent (connection closed
  // under it) can take longer by the time its first attempt took; the faults here close
  // connections at once, so that is within the margin.
  std::chrono::milliseconds bound() const {
    // Only the margin for scheduling delays scales (slowdown.hpp), never what corvid promises.
    return connect_timeout + call_timeout + corvid::test::patience(margin);
  }
};

constexpr std::size_t error_kinds = 16;

struct load_stats {
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::uint64_t> started{0}, ok{0}, bytes{0};
  std::array<std::atomic<std::uint64_t>, error_kinds> errors{};
  std::atomic<std::uint64_t> crossed{0};  // answered with another call's payload
  std::atomic<std::uint64_t> corrupt{0};  // answered with damaged bytes
  std::atomic<std::uint64_t> late{0};     // ended after its bound
  std::atomic<std::uint64_t> lost{0};     // never ended (counted by the watchdog)
  std::atomic<std::int64_t> max_call_us{0};
  std::atomic<std::uint64_t> pools_created{0};
  // Fault marks (steady_clock ticks, 0 = none) and what happened after the heal mark.
  std::atomic<std::int64_t> fault_at{0}, heal_at{0};
  std::atomic<std::uint64_t> ok_before_fault{0}, ok_during_fault{0}, ok_after_heal{0};
  std::atomic<std::int64_t> first_ok_after_heal{0};  // ticks; call started after heal_at
  std::atomic<bool> stop{false};

  // Successful calls that began after the fault mark and ended before the heal mark, so the
  // fault acted on all of their bytes: how long each took and how many bytes its reply had.
  struct fault_call {
    std::int64_t us;
    std::uint64_t reply_bytes;
  };
  mutable std::mutex fault_mutex;
  std::vector<fault_call> fault_calls;  // under fault_mutex

  void record_fault_call(std::int64_t us, std::uint64_t reply_bytes) {
    std::lock_guard lk(fault_mutex);
    fault_calls.push_back({us, reply_bytes});
  }
  // " fault_ms=.. fault_calls=.. fault_bytes=.. fault_min_ms=.. fault_p50_ms=..", for the
  // result line; the script checks the fault's effect with them.
  std::string fault_summary() const {
    std::lock_guard lk(fault_mutex);
    const auto f = fault_at.load(), h = heal_at.load();
    const double window = f != 0 && h > f ? ms(h - f) : -1;
    std::uint64_t reply_bytes = 0;
    for (auto& c : fault_calls) reply_bytes += c.reply_bytes;
    double min_ms = -1, p50_ms = -1;
    if (!fault_calls.empty()) {
      std::vector<std::int64_t> us;
      for (auto& c : fault_calls) us.push_back(c.us);
      std::sort(us.begin(), us.end());
      min_ms = static_cast<double>(us.front()) / 1000;
      p50_ms = static_cast<double>(us[us.size() / 2]) / 1000;
    }
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  " fault_ms=%.0f fault_calls=%zu fault_bytes=%llu fault_min_ms=%.1f "
                  "fault_p50_ms=%.1f",
                  window, fault_calls.size(), static_cast<unsigned long long>(reply_bytes), min_ms,
                  p50_ms);
    return buf;
  }

  std::uint64_t error_total() const {
    std::uint64_t n = 0;
    for (auto& e : errors) n += e.load();
    return n;
  }
  std::string errors_by_kind() const {
    std::string s;
    for (std::size_t i = 0; i < error_kinds; ++i) {
      if (auto n = errors[i].load()) {
        if (!s.empty()) s += ',';
        s += std::string(corvid::to_string(static_cast<corvid::rpc_errc>(i))) + ':' +
             std::to_string(n);
      }
    }
    return s.empty() ? "none" : s;
  }
  // Milliseconds from the heal mark to the first success of a call started after it (-1: none).
  double recovery_ms() const {
    auto h = heal_at.load(), f = first_ok_after_heal.load();
    if (h == 0 || f == 0) return -1;
    return ms(f - h);
  }
  static double ms(std::int64_t ticks) {
    return std::chrono::duration<double, std::milli>(steady::duration(ticks)).count();
  }
};

inline std::int64_t ticks_now() { return steady::now().time_since_epoch().count(); }

// One worker's current call, for the watchdog: start ticks, 0 when idle.
struct worker_slot {
  std::atomic<std::int64_t> call_started{0};
};

inline corvid::pool_config pool_settings(const load_options& o) {
  corvid::pool_config cfg;
  cfg.max_connections = o.pool_connections;
  cfg.max_in_flight_per_connection = 4;
  cfg.connect_timeout = o.connect_timeout;
  cfg.reconnect_backoff_initial = 20ms;
  cfg.reconnect_backoff_max = o.backoff_max;
  cfg.client.connect_timeout = o.connect_timeout;
  cfg.client.request_timeout = o.call_timeout;
  return cfg;
}

// One call: the payload as the argument, or (large payloads, every other call) as an
// attachment beside its first 16 bytes. Returns the error code, or ok after checking the reply.
inline corvid::task<corvid::rpc_errc> one_call(corvid::client_pool& pool,
                                               const std::string& payload, bool as_attachment,
                                               std::chrono::milliseconds timeout, load_stats& st) {
  const std::uint64_t id = payload_id(payload);
  auto check = [&](std::string_view got, std::string_view want) {
    if (got == want) return true;
    if (payload_id(got) != id) {
      ++st.crossed;
      std::fprintf(stderr, "call %llu answered with call %llu's payload\n",
                   static_cast<unsigned long long>(id),
                   static_cast<unsigned long long>(payload_id(got)));
    } else {
      ++st.corrupt;
      std::fprintf(stderr, "call %llu answered with damaged bytes (%zu of %zu)\n",
                   static_cast<unsigned long long>(id), got.size(), want.size());
    }
    return false;
  };
  // The first error of each kind is printed with its message.
  auto note = [&](const corvid::rpc_error& e) {
    const auto code = e.code();
    if (st.errors[static_cast<std::size_t>(code) % error_kinds].load() == 0) {
      std::fprintf(stderr, "first %s: %s\n", std::string(corvid::to_string(code)).c_str(),
                   e.message().c_str());
    }
    return code;
  };
  if (as_attachment) {
    const std::string_view head(payload.data(), 16);
    auto r = co_await pool.call_with<echo_attachment>(corvid::call_options{timeout, payload}, head);
    if (!r) co_return note(r.error());
    if (!check(r->value, head) || !check(r->attachment, payload)) co_return corvid::rpc_errc::ok;
  } else {
    auto r = co_await pool.call_for<echo>(timeout, std::string_view(payload));
    if (!r) co_return note(r.error());
    if (!check(*r, payload)) co_return corvid::rpc_errc::ok;
  }
  ++st.ok;
  st.bytes += payload.size();
  co_return corvid::rpc_errc::ok;
}

// Makes calls until st.stop. `shared` is used unless o.churn_every > 0 (own, churned pools).
inline void run_worker(const load_options& o, std::shared_ptr<corvid::client_pool> shared,
                       load_stats& st, worker_slot& slot, unsigned seed) {
  std::minstd_rand rng(seed);
  std::uniform_real_distribution<double> log_size(std::log2(double(o.min_size)),
                                                  std::log2(double(o.max_size)));
  auto pool = shared;
  int calls_on_pool = 0;
  const auto bound = o.bound();
  while (!st.stop.load()) {
    if (o.churn_every > 0 && (!pool || calls_on_pool >= o.churn_every)) {
      pool.reset();  // destroyed while others run: pool churn
      pool = corvid::client_pool::create(o.endpoint, pool_settings(o));
      ++st.pools_created;
      calls_on_pool = 0;
    }
    ++calls_on_pool;
    const std::uint64_t id = st.next_id++;
    const auto size = static_cast<std::size_t>(std::exp2(log_size(rng)));
    const std::string payload = make_payload(id, size);
    const bool as_attachment = size >= 64 * 1024 && (id & 1);
    const auto begin = ticks_now();
    slot.call_started = begin;
    ++st.started;
    const auto code =
        corvid::sync_wait(one_call(*pool, payload, as_attachment, o.call_timeout, st));
    const auto end = ticks_now();
    slot.call_started = 0;
    const auto took = steady::duration(end - begin);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(took).count();
    for (auto m = st.max_call_us.load(); us > m && !st.max_call_us.compare_exchange_weak(m, us);) {
    }
    if (took > 2 * o.call_timeout / 5 + 1s && took <= bound) {
      std::fprintf(stderr, "slow: call %llu (%zu B) took %lld ms: %s\n",
                   static_cast<unsigned long long>(id), size, static_cast<long long>(us / 1000),
                   std::string(corvid::to_string(code)).c_str());
    }
    if (took > bound) {
      ++st.late;
      std::fprintf(stderr, "call %llu took %lld ms (bound %lld ms)\n",
                   static_cast<unsigned long long>(id), static_cast<long long>(us / 1000),
                   static_cast<long long>(bound.count()));
    }
    if (code != corvid::rpc_errc::ok) {
      ++st.errors[static_cast<std::size_t>(code) % error_kinds];
      std::this_thread::sleep_for(20ms);  // do not spin while the path is down
      continue;
    }
    const auto fault = st.fault_at.load(), heal = st.heal_at.load();
    if (fault == 0) ++st.ok_before_fault;
    if (fault != 0 && (heal == 0 || begin < heal)) ++st.ok_during_fault;
    if (fault != 0 && begin >= fault && (heal == 0 || end <= heal)) {
      st.record_fault_call(us, as_attachment ? 16 + payload.size() : payload.size());
    }
    if (heal != 0 && begin >= heal) {
      ++st.ok_after_heal;
      std::int64_t expected = 0;
      st.first_ok_after_heal.compare_exchange_strong(expected, end);
    }
  }
}

// Counts workers stuck in one call for longer than lost_after. Returns the number now stuck.
inline std::uint64_t stuck_calls(const std::vector<std::unique_ptr<worker_slot>>& slots,
                                 std::chrono::milliseconds lost_after) {
  std::uint64_t n = 0;
  const auto now = ticks_now();
  for (auto& s : slots) {
    const auto t = s->call_started.load();
    if (t != 0 && steady::duration(now - t) > lost_after) ++n;
  }
  return n;
}

}  // namespace corvid_fault
