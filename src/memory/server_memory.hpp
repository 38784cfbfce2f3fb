#pragma once
// The server's memory trackers and the per-connection accounting built on them:
//
//   process
//   └─ server                 server_config::max_memory
//      ├─ read_buffers        read_buffer_share of it: reads can never starve the calls
//      │  └─ <peer>           one leaf per connection: its read buffer's capacity
//      ├─ queued_replies
//      │  └─ <peer>           encoded replies not yet written; max_queued_reply_bytes
//      ├─ in_flight
//      │  └─ <peer>           request bytes of running calls (a coroutine copies its request)
//      ├─ tls_sessions
//      │  └─ <peer>           an established TLS connection's session state and buffers
//      └─ pre_auth            pre_auth_share of it: connections before their first byte and
//         └─ <peer>           TLS handshakes (never taking the fair reserve below)
//
// Reads, calls (request copies, decoded arguments, call state) and replies are all reserved
// with try_reserve before anything is allocated; a connection that is refused pauses (stops
// reading: TCP pushes back on its client) and registers as a waiter, resumed in order when
// memory is released. Only small, bounded frames (errors, control) are charged by force.
//
// Fairness: the server's last fair_reserve bytes (a sixteenth of its limit) are kept for
// connections that hold little. A reservation that would make its connection hold more than
// light_limit (a 256th) may not take them, so peers that fill the server with unread
// replies or big calls cannot make a light client (a ping, a small call) wait for memory:
// theirs waits, its does not. Light waiters are also woken before heavy ones.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "corvid/memory/memory_tracker.hpp"
#include "corvid/server/server_config.hpp"

namespace corvid::detail {

class server_memory {
 public:
  explicit server_memory(const server_config& config);

  memory_tracker server;
  memory_tracker read_buffers;
  memory_tracker queued_replies;
  memory_tracker in_flight;
  memory_tracker tls_sessions;
  memory_tracker pre_auth;
  const std::size_t max_queued_reply_bytes;
  const std::size_t max_call_bytes_per_connection;
  // See "Fairness" above; both 0 when the server's memory is unlimited.
  const std::size_t fair_reserve;
  const std::size_t light_limit;

  // Runs `resume` (on the thread that frees memory: it should post to its reactor) once
  // `need` more bytes of read memory (`for_read`) or call memory are available. Checks
  // `enough` after registering, so a release between the failed reservation and this call is
  // never missed. Every new waiter runs the holders' reclaim callbacks once (see add_holder),
  // asking connections that hold memory they could give back to do so. A `light` waiter (its
  // connection holds little) is woken before every heavy one, and a heavy one only when
  // `need` fits beyond the fair reserve.
  void wait(std::function<void()> resume, const std::function<bool()>& enough, bool for_read,
            bool light, std::size_t need);
  // A connection holding memory it could give back (a grown idle read buffer, replies its
  // peer does not read) registers a `reclaim` (it should post to its reactor), run once when
  // someone waits for memory: it would otherwise keep that memory however long. A connection
  // that closes first removes itself (its callback's weak_ptr would otherwise keep the
  // connection's storage allocated).
  void add_holder(const void* key, std::function<void()> reclaim);
  void remove_holder(const void* key);
  // After releasing memory: resumes waiters in arrival order while what they need is
  // available (each retries; one still refused waits again), so a release costs O(woken),
  // not O(waiters). One fence and one load when nobody waits.
  void notify();
  bool has_waiters() const noexcept { return waiters_.load(std::memory_order_relaxed) != 0; }
  // Memory is short: someone waits, or less than a sixteenth of the server's limit is free.
  // (Waiters come and go as releases wake them to retry; a nearly full server stays
  // pressed in between.)
  bool pressed() const noexcept {
    return has_waiters() || server.available() < server.limit() / 16;
  }

 private:
  struct waiter {
    std::function<void()> resume;
    std::size_t need;
  };
  // Pops the waiters of `q` that fit in `available`, in order, into `ready`: what is left.
  static std::size_t take_ready(std::deque<waiter>& q, std::size_t available,
                                std::vector<std::function<void()>>& ready);

  std::atomic<std::size_t> waiters_{0};
  std::mutex mutex_;
  std::deque<waiter> read_waiters_;
  std::deque<waiter> light_call_waiters_;  // woken first
  std::deque<waiter> call_waiters_;
  std::unordered_map<const void*, std::function<void()>> holders_;
};

// One connection's leaves and the charges it holds. Reactor thread only.
class connection_memory {
 public:
  connection_memory(server_memory& server, const std::string& name);
  ~connection_memory();

  // Read buffer: reserve before growing to `capacity`; false = no room, do not grow.
  bool reserve_read(std::size_t capacity) noexcept;
  // The same for growth that nothing guarantees will complete (a bigger read room, a frame
  // grown with its bytes before it is granted whole): allowed only while all read buffers
  // together hold under half their limit. The other half stays for whole-frame grants, so
  // connections holding partial frames can never take all the memory and leave every one of
  // them waiting for more (a deadlock).
  bool reserve_read_speculative(std::size_t capacity) noexcept;
  // A connection's first read buffer: from the read share, or, once reads have taken their
  // share, from the server's free memory above the fair reserve. A new connection holds
  // nothing else, and without a buffer it cannot be served at all: behind a read share full
  // of partial frames (each waiting for more) it would wait as long as they do. False = wait.
  // (Two reactors passing the check at once may each charge theirs: one buffer of overshoot
  // past the fair reserve per reactor at most, never past the server's limit by more.)
  bool reserve_first_read(std::size_t capacity) noexcept;
  // Brings the read charge to the buffer's capacity after it changed (a shrink releases).
  void settle_read(std::size_t capacity) noexcept;

  // In-flight calls. Before dispatching a frame: room for its request bytes in a batch
  // credit (a batch of small calls costs one reservation). False = no room. A coroutine call,
  // which copies its request, charges the bytes from the credit (charge_admitted); a
  // synchronous one reads the request where it lies in the read buffer, already charged.
  bool admit(std::size_t bytes) noexcept { return credit_ >= bytes || admit_more(bytes); }
  // Gives the unused credit back now (a reply needs the memory), instead of at end_batch().
  void release_credit() noexcept;
  // Credit the frame being dispatched may still take (decoded arguments, call state), after
  // reserving up to `want` (as much of it as the trackers allow; unused credit returns at
  // end_batch()).
  std::size_t allowance(std::size_t want) noexcept {
    return credit_ >= want ? credit_ : allowance_more(want);
  }
  // Moves `bytes` of the allowance into the admitted frame's charge.
  void charge_admitted(std::size_t bytes) noexcept {
    bytes = std::min(bytes, credit_);  // never more than was allowed
    credit_ -= bytes;
    admitted_ += bytes;
  }
  // The admitted frame became a running call that keeps its bytes until call_done().
  std::size_t take_admitted() noexcept;
  // The admitted frame is done (handled synchronously): its bytes return to the credit.
  void return_admitted() noexcept;
  void call_done(std::size_t bytes) noexcept;
  // Charges `bytes` that something outside a dispatch holds (a stream producer's pending
  // item) to the call memory, like a request's; false = no room (nothing charged). Given
  // back with call_done().
  bool hold(std::size_t bytes) noexcept {
    if (!admit(bytes)) return false;
    credit_ -= bytes;
    return true;
  }
  // End of a batch: unused credit goes back.
  void end_batch() noexcept;

  // Reply memory a connection keeps reserved between batches (see settle_replies): what a
  // small reply and the dispatch check need, without a tracker operation per call.
  static constexpr std::size_t reply_keep = 4096;

  // An established TLS connection's session and record buffers (moved there from the
  // pre-authentication budget by end_pre_auth): where their growth is reserved.
  memory_tracker* tls_tracker() noexcept { return tls_ ? &*tls_ : nullptr; }
  // Pre-authentication state (the connection before its first byte, a TLS handshake):
  // charged to the server's pre_auth budget, and never into the fair reserve. False = no
  // room (nothing charged).
  bool reserve_pre_auth(std::size_t bytes, const std::string& name);
  memory_tracker* pre_auth_tracker() noexcept { return pre_auth_ ? &*pre_auth_ : nullptr; }
  // Pre-authentication is over: what it held is released, and with `as_tls` moved to the
  // established TLS sessions (false: no room for it there; the caller closes).
  bool end_pre_auth(bool as_tls, const std::string& name);
  // The TLS session is gone while the connection stays (RDMA took over after a setup over
  // TLS): what it held is given back.
  void release_tls() noexcept {
    if (tls_) tls_->release(tls_->current());
  }
  // Queued replies. Before encoding a reply of `bytes`, with `queued` bytes already queued:
  // reserves it (from a credit, like calls). False = refused: the connection's queue is at
  // max_queued_reply_bytes, or the server has no memory for it.
  bool reserve_reply(std::size_t bytes, std::size_t queued) noexcept {
    return (queued == 0 || !replies_full(queued)) &&
           (replies_charged_ >= queued + bytes || reserve_reply_more(bytes, queued));
  }
  // Brings the reply charge to what is queued now: releases what was written and spare
  // credit past reply_keep; charges by force what was queued without a reservation (small,
  // bounded frames: errors, pongs).
  void settle_replies(std::size_t queued) noexcept;
  // The connection went idle (read_gate::release_idle): no spare reply credit stays either.
  void drop_reply_spare(std::size_t queued) noexcept;
  bool replies_full(std::size_t queued) const noexcept {
    return queued >= server_.max_queued_reply_bytes;
  }
  // Whether a reply could ever be queued (its size against the server's limit).
  bool reply_could_fit(std::size_t bytes) const noexcept { return bytes <= server_.server.limit(); }

  // Whether a refused reservation could ever succeed: one larger than its tracker's limit
  // would wait forever, so the caller answers message_too_large instead of waiting.
  bool read_could_fit(std::size_t capacity) const noexcept {
    return capacity <= server_.read_buffers.limit();
  }
  bool call_could_fit(std::size_t bytes) const noexcept {
    return bytes <= std::min(server_.in_flight.limit(), calls_.limit());
  }

  // Room a reservation could still get (for deciding whether a waiter may retry).
  std::size_t read_available() const noexcept { return read_.available(); }
  std::size_t call_available() const noexcept {
    return credit_ + std::min(calls_.available(), fair_room());
  }
  // Whether growing this connection's charge by `bytes` keeps it light (see server_memory):
  // such a reservation may use the server's fair_reserve.
  bool stays_light(std::size_t bytes) const noexcept {
    return held() + bytes <= server_.light_limit;
  }
  server_memory& server() noexcept { return server_; }

 private:
  // What this connection holds on the server: read buffer, calls and credit, queued replies.
  std::size_t held() const noexcept { return read_charged_ + calls_.current() + replies_charged_; }
  // The most a reservation may take now: all that is free while the connection stays light,
  // otherwise what is free beyond the fair reserve.
  std::size_t fair_room() const noexcept;
  bool admit_more(std::size_t bytes) noexcept;
  std::size_t allowance_more(std::size_t want) noexcept;
  bool reserve_reply_more(std::size_t bytes, std::size_t queued) noexcept;

  server_memory& server_;
  memory_tracker read_;
  memory_tracker replies_;
  memory_tracker calls_;
  std::optional<memory_tracker> tls_;       // TLS connections only
  std::optional<memory_tracker> pre_auth_;  // until its first byte / handshake
  std::size_t read_charged_ = 0;
  std::size_t replies_charged_ = 0;  // queued replies plus spare reply credit
  std::size_t credit_ = 0;           // reserved on calls_, not yet owned by a call
  std::size_t admitted_ = 0;         // the frame being dispatched
};

}  // namespace corvid::detail
