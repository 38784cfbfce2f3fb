#pragma once
// The client's timed calls, earliest deadline first: an intrusive doubly linked list through
// the calls' slots (call_slot::prev/next), so linking and unlinking allocate nothing. Calls
// mostly share one timeout, so a new deadline is usually the latest: insertion walks from the
// tail, and a call goes after every call with the same deadline (first come, first expired).
// Not thread-safe: the caller holds the connection mutex.
#include <chrono>

#include "corvid/client/call_state.hpp"

#include "call_table.hpp"

namespace corvid::detail {

class deadline_list {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // Links `call` in by `deadline`, which its slot stores with timed = true.
  void insert(call_base* call, time_point deadline) noexcept {
    call_slot& s = slot_of(*call);
    s.deadline = deadline;
    s.timed = true;
    call_base* after = tail_;
    while (after != nullptr && slot_of(*after).deadline > deadline) after = slot_of(*after).prev;
    s.prev = after;
    s.next = after ? slot_of(*after).next : head_;
    (s.next ? slot_of(*s.next).prev : tail_) = call;
    (after ? slot_of(*after).next : head_) = call;
  }

  // Unlinks `call` if it is linked (timed), and clears timed.
  void unlink(call_base* call) noexcept {
    call_slot& s = slot_of(*call);
    if (!s.timed) return;
    (s.prev ? slot_of(*s.prev).next : head_) = s.next;
    (s.next ? slot_of(*s.next).prev : tail_) = s.prev;
    s.prev = s.next = nullptr;
    s.timed = false;
  }

  // The call with the earliest deadline, or null.
  call_base* head() const noexcept { return head_; }
  // Its deadline, or time_point::max() when no call is timed.
  time_point earliest() const noexcept {
    return head_ ? slot_of(*head_).deadline : time_point::max();
  }

  // Unlinks and returns the earliest call if its deadline is at or before `now`; else null.
  call_base* pop_expired(time_point now) noexcept {
    call_base* call = head_;
    if (call == nullptr || slot_of(*call).deadline > now) return nullptr;
    unlink(call);
    return call;
  }

  // Forgets every call (their links are left for the caller to reset).
  void clear() noexcept { head_ = tail_ = nullptr; }

 private:
  call_base* head_ = nullptr;
  call_base* tail_ = nullptr;
};

}  // namespace corvid::detail
