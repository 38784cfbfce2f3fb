#pragma once
// Admission for one connection: everything its peer makes the server hold is asked for
// here before it is held, and shared resources give the connection a bounded share.
//
//   what the peer holds                 asked with            share / reserve
//   read buffer                         memory().reserve_read read_buffers (half speculative)
//   a request (copy, arguments, state)  admits_request        max_call_bytes_per_connection,
//                                                             the server's fair reserve
//   a call slot                         admits_request        max_calls_per_connection
//   a place in the worker queue         admits_request        an eighth of its length and
//                                       (blocking methods)    bytes; the pool's light reserve
//   a stream                            open_stream           max_streams_per_connection
//   a client's stream item              admit_item            call memory, as a request
//   a producer's pending item           hold                  call memory, as a request
//   queued replies                      memory().reserve_reply max_queued_reply_bytes
//   TLS session state                   (connection_setup)    the pre-authentication budget
//
// It owns the connection's trackers, its counts of what is in flight, and why it is paused,
// and answers with a verdict; it never calls the connection (reactor thread only).
#include <cstddef>
#include <cstdint>

#include "corvid/protocol/frame_header.hpp"
#include "corvid/server/server_config.hpp"

#include "../memory/server_memory.hpp"
#include "verdict.hpp"

namespace corvid::detail {

class connection_admission {
 public:
  connection_admission(server_memory& memory, const server_config& config, const std::string& peer);

  // While others wait for memory, a connection pausing for calls or replies needs this much
  // call memory free before it dispatches again (and a reply needs this much room).
  static constexpr std::size_t min_dispatch_room = connection_memory::reply_keep;

  // ---- requests
  // The common case, a few compares: every check passes (the id is new, a call slot, room
  // for a reply and for the request's bytes; for a blocking method, a worker-queue place).
  // On true the request's bytes are admitted (memory().return_admitted() unless a call
  // took them). False: decide_request() says what to do instead.
  bool admits_request(const protocol::frame_header& h, bool duplicate_id, bool blocking,
                      std::size_t queued_replies) noexcept {
    return h.request_id != 0 && !duplicate_id && !draining_ && calls_ < max_calls_ &&
           (!blocking || worker_share_left(h.payload_size())) &&
           mem_.reserve_reply(min_dispatch_room, queued_replies) && mem_.admit(h.payload_size());
  }
  [[gnu::cold]] verdict decide_request(const protocol::frame_header& h, bool duplicate_id,
                                       bool blocking, std::size_t queued_replies);

  // ---- streams
  // A stream opens: refused at max_streams_per_connection (a stream may last indefinitely,
  // so waiting for a place could wait forever).
  verdict open_stream();
  void stream_closed() noexcept { --streams_; }
  std::size_t open_streams() const noexcept { return streams_; }
  // An item the client wrote, before it is copied into its stream's inbox: charged to the
  // call memory (released through release()).
  verdict admit_item(std::size_t cost);
  // An item a stream's producer yielded while its client grants no credit: the suspended
  // handler holds it, so it is charged like the items a client writes. False: no memory for
  // it (the stream ends with server_busy and the item is freed at once).
  bool hold(std::size_t bytes) noexcept;
  // What admit_item or hold charged, given back.
  void release(std::size_t bytes) noexcept { mem_.call_done(bytes); }

  // ---- calls
  void call_started() noexcept { ++calls_; }
  // A started blocking call of `bytes` (its request and arguments) was queued for a worker
  // (worker_pool): it holds a place and its bytes in the connection's share until it ends.
  void blocking_queued(std::size_t bytes) noexcept {
    ++blocking_;
    blocking_bytes_ += bytes;
  }
  // Whether a blocking call from this connection, now, is light: it may take the worker
  // queue's reserve.
  bool blocking_light() const noexcept { return blocking_ < light_blocking; }
  // A call ended (a blocking one with the bytes it queued): true when that lifts the pause it
  // was waiting for (calls or workers).
  bool call_finished(bool blocking, std::size_t blocking_bytes = 0) noexcept;
  std::size_t calls() const noexcept { return calls_; }
  std::size_t blocking_share() const noexcept { return blocking_share_; }
  // Whether one more blocking call of about `bytes` fits the connection's share of the worker
  // queue (its first always does: a call always fits an empty queue).
  bool worker_share_left(std::size_t bytes) const noexcept {
    return blocking_ == 0 ||
           (blocking_ < blocking_share_ && blocking_bytes_ + bytes <= blocking_bytes_share_);
  }

  // ---- pauses: the connection reads nothing while one holds
  void pause(pause_reason r) noexcept { paused_ |= bit(r); }
  // Clears `r`: true if it was set.
  bool lift(pause_reason r) noexcept {
    const bool was = (paused_ & bit(r)) != 0;
    paused_ &= static_cast<std::uint8_t>(~bit(r));
    return was;
  }
  bool paused() const noexcept { return paused_ != 0; }
  bool paused_for(pause_reason r) const noexcept { return (paused_ & bit(r)) != 0; }
  // Paused for `r` and nothing else.
  bool paused_only_for(pause_reason r) const noexcept { return paused_ == bit(r); }
  // stop(): new requests are refused (open streams still move).
  void stop_admitting() noexcept { draining_ = true; }
  bool draining() const noexcept { return draining_; }

  connection_memory& memory() noexcept { return mem_; }
  const connection_memory& memory() const noexcept { return mem_; }

 private:
  // A connection with fewer blocking calls than this in flight may take the worker queue's
  // reserve (worker_pool::submit).
  static constexpr std::size_t light_blocking = 2;
  static constexpr std::uint8_t bit(pause_reason r) noexcept {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(r));
  }
  verdict refuse_or_wait(const protocol::frame_header& h, bool server_full);

  server_memory& server_;
  connection_memory mem_;
  const std::size_t max_calls_;
  const std::size_t max_streams_;
  const std::size_t blocking_share_;
  const std::size_t blocking_bytes_share_;
  const bool busy_at_limit_;
  std::size_t calls_ = 0;           // started calls not yet finished (coroutine, blocking, stream)
  std::size_t blocking_ = 0;        // ... of which blocking, queued or running on a worker
  std::size_t blocking_bytes_ = 0;  // ... and their bytes
  std::size_t streams_ = 0;
  std::uint8_t paused_ = 0;  // pause_reason bits
  bool draining_ = false;
};

}  // namespace corvid::detail
