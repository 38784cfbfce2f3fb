#pragma once
// Requests the client had no room for (client_config caps, when_busy == wait), oldest first:
// an intrusive singly linked FIFO of parked_request, each encoded apart and owned by the
// queue while in it. While queued, the call's slot's `parked` points at its request.
// Not thread-safe: the caller holds the connection mutex.
#include <memory>
#include <string>
#include <string_view>

#include "corvid/client/call_state.hpp"

#include "../protocol/frames.hpp"
#include "call_table.hpp"

namespace corvid::detail {

// The request's header fields; its id and remaining timeout are filled in, and the header
// built (protocol::make_request) into the frame's room, when it is admitted to the send queue.
struct parked_request {
  call_base* call = nullptr;
  protocol::request_fields request;
  std::string frame;          // header room, body and a copied attachment
  std::string_view borrowed;  // or the caller's attachment (zero copy)
  parked_request* next = nullptr;
};

class parked_queue {
 public:
  parked_queue() = default;
  parked_queue(const parked_queue&) = delete;
  parked_queue& operator=(const parked_queue&) = delete;
  ~parked_queue() {
    while (!empty()) pop_front();
  }

  bool empty() const noexcept { return head_ == nullptr; }
  // The oldest request, or null.
  parked_request* front() const noexcept { return head_; }

  // Queues `p` (its call set) last.
  void push_back(std::unique_ptr<parked_request> p) noexcept {
    slot_of(*p->call).parked = p.get();
    p->next = nullptr;
    (tail_ != nullptr ? tail_->next : head_) = p.get();
    tail_ = p.release();
  }

  // Dequeues the oldest request; null when empty.
  std::unique_ptr<parked_request> pop_front() noexcept {
    if (head_ == nullptr) return nullptr;
    std::unique_ptr<parked_request> p(std::exchange(head_, head_->next));
    if (head_ == nullptr) tail_ = nullptr;
    slot_of(*p->call).parked = nullptr;
    return p;
  }

  // Dequeues `call`'s request wherever it is (a walk: parked calls are few and their deadlines
  // rare); null if the call has none here.
  std::unique_ptr<parked_request> remove(call_base* call) noexcept {
    parked_request* prev = nullptr;
    parked_request* p = head_;
    while (p != nullptr && p->call != call) prev = std::exchange(p, p->next);
    if (p == nullptr) return nullptr;
    (prev != nullptr ? prev->next : head_) = p->next;
    if (tail_ == p) tail_ = prev;
    slot_of(*call).parked = nullptr;
    return std::unique_ptr<parked_request>(p);
  }

 private:
  parked_request* head_ = nullptr;
  parked_request* tail_ = nullptr;
};

}  // namespace corvid::detail
