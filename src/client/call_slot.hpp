#pragma once
// The connection's part of one call record: its request id, submission order, deadline links,
// pin and park state, a stream's extra credit and its metrics. Users see none of it: the call
// record (corvid/client/call_state.hpp) keeps a fixed-size private area that only src/client
// interprets, as a call_slot. Inside the call, so that filing one allocates nothing and reaching
// these fields is an offset from the call, no table lookup.
// Owned by the connection, under its lock (the caller reads `id` only before handing the call
// over, or after its submission returned on the same thread).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

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

}  // namespace corvid::detail
