#pragma once
// The client's pending calls: each call's slot (the connection's part of its record), and the
// table that finds a call by request id.
//
// The slot holds the request id, submission order, deadline links, pin and park state, a
// stream's extra credit and its metrics. Users see none of it: the call record
// (corvid/client/call_state.hpp) keeps a fixed-size private area that only src/client
// interprets, as a call_slot. Inside the call, so that filing one allocates nothing and reaching
// these fields is an offset from the call, no table lookup. Owned by the connection, under its
// lock (the caller reads `id` only before handing the call over, or after its submission
// returned on the same thread).
//
// The table: a call's id is its entry's generation in the high 32 bits and the entry's index in
// the low 32: looking an id up is an index, and a late or duplicate reply to an ended call finds
// its entry under a newer generation and matches nothing. Generations skip 0, so id 0 (the
// server's connection-level errors) never names a call. Not thread-safe: the caller holds the
// connection mutex; only size() may be read from any thread.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "corvid/client/call_state.hpp"

namespace corvid::metrics {
struct client_method_stats;  // src/metrics: one method's counters on one connection
}

namespace corvid::detail {

struct parked_request;  // parked_queue.hpp

struct call_slot {
  using time_point = std::chrono::steady_clock::time_point;

  std::uint64_t id;   // call_table's key: 0 until the call is filed
  std::uint64_t seq;  // submission order: tells calls whose bytes were never written
  time_point deadline;
  call_base* prev;  // deadline_list
  call_base* next;
  parked_request* parked;  // waiting for room: its encoded request
  // Client metrics (client_config::metrics): the method's stats, null when off or once the
  // call's end is counted, and when it was submitted (metrics::client_recorder's fields).
  metrics::client_method_stats* call_stats;
  time_point submitted_at;
  // Streams: credit granted beyond the protocol's initial window, sent right behind the
  // request whenever it is queued (at once, or when a parked request gets room).
  std::uint32_t extra_credit;
  bool timed;
  // The request's attachment is borrowed caller memory still queued or being written: the
  // caller must not resume (and perhaps free it) before the write is done.
  bool pinned;
  bool completion_deferred;  // a result arrived while pinned

  // The slot in `call`'s private area. The area's bytes begin their life zeroed with the call,
  // which creates the slot (an implicit-lifetime aggregate) in its empty state: every field
  // zero, null or false.
  static call_slot& of(call_base& call) noexcept {
    static_assert(sizeof(call_slot) <= call_base::slot_size);
    static_assert(alignof(call_slot) <= call_base::slot_align);
    static_assert(std::is_aggregate_v<call_slot> && std::is_trivially_copyable_v<call_slot>);
    return *std::launder(reinterpret_cast<call_slot*>(call.slot_));
  }
  static const call_slot& of(const call_base& call) noexcept {
    return of(const_cast<call_base&>(call));
  }
};

inline call_slot& slot_of(call_base& call) noexcept { return call_slot::of(call); }
inline const call_slot& slot_of(const call_base& call) noexcept { return call_slot::of(call); }

class call_table {
 public:
  // The generation after `g`, skipping 0.
  static constexpr std::uint32_t next_generation(std::uint32_t g) noexcept {
    return g == UINT32_MAX ? 1 : g + 1;
  }

  // Files `call` under a free entry (the most recently freed first) and sets its slot's id.
  void insert(call_base* call) {
    std::uint32_t index;
    if (free_.empty()) {
      index = static_cast<std::uint32_t>(entries_.size());
      entries_.emplace_back();
    } else {
      index = free_.back();
      free_.pop_back();
    }
    entries_[index].call = call;
    slot_of(*call).id = (std::uint64_t{entries_[index].generation} << 32) | index;
    add_filed(1);
  }

  // Removes and returns the call filed under `id`; null if none is (an unknown, stale or
  // duplicate id). Frees the entry, under the next generation.
  call_base* take(std::uint64_t id) {
    const auto index = static_cast<std::uint32_t>(id);
    if (index >= entries_.size()) return nullptr;
    entry& s = entries_[index];
    if (s.call == nullptr || s.generation != static_cast<std::uint32_t>(id >> 32)) return nullptr;
    call_base* call = std::exchange(s.call, nullptr);
    release(index);
    return call;
  }

  // The call filed under `id`, left filed; null if none is.
  call_base* find(std::uint64_t id) const noexcept {
    const auto index = static_cast<std::uint32_t>(id);
    if (index >= entries_.size()) return nullptr;
    const entry& s = entries_[index];
    return s.generation == static_cast<std::uint32_t>(id >> 32) ? s.call : nullptr;
  }

  // Calls filed and not taken. Any thread: a mirror, so a pool's pick reads it without the
  // connection mutex.
  std::size_t size() const noexcept { return filed_.load(std::memory_order_relaxed); }

  // f(call) for every filed call, in entry order.
  template <class F>
  void for_each(F&& f) const {
    for (const entry& s : entries_) {
      if (s.call != nullptr) f(s.call);
    }
  }

  // Takes every filed call, in entry order, handing each to f(call).
  template <class F>
  void take_all(F&& f) {
    for (std::uint32_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].call == nullptr) continue;
      call_base* call = std::exchange(entries_[i].call, nullptr);
      release(i);
      f(call);
    }
  }

 private:
  struct entry {
    call_base* call = nullptr;
    std::uint32_t generation = 1;
  };

  void release(std::uint32_t index) {
    entries_[index].generation = next_generation(entries_[index].generation);
    free_.push_back(index);
    add_filed(-1);
  }

  // Writers hold the connection mutex, so a plain load and store suffice (no locked add).
  void add_filed(int delta) noexcept {
    filed_.store(filed_.load(std::memory_order_relaxed) + static_cast<std::size_t>(delta),
                 std::memory_order_relaxed);
  }

  std::vector<entry> entries_;
  std::vector<std::uint32_t> free_;
  std::atomic<std::size_t> filed_{0};  // entries_.size() - free_.size()
};

}  // namespace corvid::detail
