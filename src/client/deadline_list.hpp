#pragma once
// The client's timed calls, earliest deadline first: an intrusive doubly linked list through
// call_base::prev/next, so linking and unlinking allocate nothing. Calls mostly share one
// timeout, so a new deadline is usually the latest: insertion walks from the tail, and a call
// goes after every call with the same deadline (first come, first expired).
// Not thread-safe: the caller holds the connection mutex.
#include <chrono>

#include "corvid/client/call_state.hpp"

namespace corvid::detail {

class deadline_list {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // Links `call` in by `deadline`, which it stores with timed = true.
  void insert(call_base* call, time_point deadline) noexcept {
    call->deadline = deadline;
    call->timed = true;
    call_base* after = tail_;
    while (after != nullptr && after->deadline > deadline) after = after->prev;
    call->prev = after;
    call->next = after ? after->next : head_;
    (call->next ? call->next->prev : tail_) = call;
    (after ? after->next : head_) = call;
  }

  // Unlinks `call` if it is linked (timed), and clears timed.
  void unlink(call_base* call) noexcept {
    if (!call->timed) return;
    (call->prev ? call->prev->next : head_) = call->next;
    (call->next ? call->next->prev : tail_) = call->prev;
    call->prev = call->next = nullptr;
    call->timed = false;
  }

  // The call with the earliest deadline, or null.
  call_base* head() const noexcept { return head_; }
  // Its deadline, or time_point::max() when no call is timed.
  time_point earliest() const noexcept { return head_ ? head_->deadline : time_point::max(); }

  // Unlinks and returns the earliest call if its deadline is at or before `now`; else null.
  call_base* pop_expired(time_point now) noexcept {
    call_base* call = head_;
    if (call == nullptr || call->deadline > now) return nullptr;
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
