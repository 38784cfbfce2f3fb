#pragma once
// A server connection's incoming side: whether it reads, the read in flight, the read buffer
// and its memory (taken when bytes arrive, grown for a frame, given back when idle or when
// others wait), and
// the batch of frames one read delivered. Two enums say where it stands: the phase of its
// life (open → draining → stopped → peer finished → closed, only ever forward) and what its
// socket read is doing. Reactor thread only.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <system_error>
#include <utility>

#include "corvid/protocol/frame_header.hpp"

#include "../runtime/asio_all.hpp"

namespace corvid::detail {

class server_connection;

class read_gate {
 public:
  // Reply bytes one batch may queue before it yields its reactor: the frames left in the
  // buffer go on in a post, after the events of the reactor's other connections. Without it,
  // a peer whose requests piled up while the reactor was busy (big replies, slow handlers)
  // takes the reactor for the whole pile, and every other connection on it waits that long.
  static constexpr std::size_t turn_budget = 256 * 1024;

  using time_point = std::chrono::steady_clock::time_point;

  enum class phase : unsigned char {
    open,
    draining,       // stop(): reading on only while streams are open
    stopped,        // drain, protocol error or peer EOF: read nothing more
    peer_finished,  // FIN from the peer: its running calls were cancelled
    closed,
  };
  enum class read_state : unsigned char {
    idle,
    reading,     // a socket read is in flight
    reclaiming,  // ... and was cancelled to shrink its buffer
    releasing,   // ... and was cancelled to give its whole (idle) buffer back
    waiting,     // no buffer: a wait for readability is in flight (plain sockets)
    yielded,     // the batch spent its turn: frames wait in the buffer for a posted resume
  };
  // What a completed read means for the connection.
  // `released`: the read was cancelled to give the idle buffer back; wait_readable() follows.
  enum class read_end : unsigned char {
    bytes,
    again,
    released,
    ignore,
    peer_finished,
    failed,
    stopped
  };

  explicit read_gate(server_connection& c) noexcept : c_(c) {}

  bool closed() const noexcept { return phase_ == phase::closed; }
  bool stopped() const noexcept { return phase_ >= phase::stopped; }
  bool peer_gone() const noexcept { return phase_ >= phase::peer_finished; }
  bool draining() const noexcept { return phase_ == phase::draining; }
  void stop() noexcept { advance(phase::stopped); }
  void drain() noexcept { advance(phase::draining); }
  void peer_finished() noexcept { advance(phase::peer_finished); }
  bool close() noexcept;  // false when it already was

  // Starts reading. On a plain socket it holds no buffer until bytes arrive (wait_readable);
  // otherwise it takes the read buffer at once (take_buffer).
  void begin();
  // An idle connection on a plain socket: bytes arrive seldom, so its read buffer goes back to
  // the reactor's pool (and its charge with it) and it waits for readability without one.
  // Only when a read with an empty buffer is in flight; the read is cancelled first.
  void release_idle();
  // Holds an empty buffer while a read waits on a plain socket (release_idle would give it up).
  bool holds_idle_buffer() const noexcept;
  // Waits for readability without a buffer; takes one when bytes arrive.
  void wait_readable();
  // Reads on, unless something holds it back (a pause, the turn budget, a phase).
  void read_more();
  // `cancellable`: the stream's reads take a cancellation slot (stream.read_cancellable()).
  read_end read_done(const std::error_code& ec, bool cancellable) noexcept {
    const read_state was = std::exchange(read_, read_state::idle);
    // asio leaves a completed op's cancellation handler in the slot; a later emit must not
    // reach it.
    if (cancellable) read_cancel_.slot().clear();
    if (closed()) return read_end::ignore;
    if (ec || was != read_state::reading) [[unlikely]]
      return read_not_plain(ec, was);
    return stopped() ? read_end::stopped : read_end::bytes;
  }

  // The batch one read delivered.
  void begin_batch(std::size_t queued_replies) noexcept {
    in_batch_ = true;
    batch_start_bytes_ = queued_replies;
    if (read_ == read_state::yielded) read_ = read_state::idle;
    batch_frames_ = 0;
    batch_requests_ = false;
  }
  void end_batch() noexcept { in_batch_ = false; }
  // Replies queued meanwhile wait for the batch's end, to leave in one write.
  bool in_batch() const noexcept { return in_batch_; }
  // The batch has queued more than its turn's share of replies while frames remain: it ends,
  // and the rest goes on after the reactor's other connections.
  bool turn_spent(std::size_t queued_replies) const noexcept {
    return queued_replies > batch_start_bytes_ + turn_budget;
  }
  void yield() noexcept { read_ = read_state::yielded; }
  void count_frame(bool request) noexcept {
    ++batch_frames_;
    batch_requests_ = batch_requests_ || request;
  }
  std::uint64_t batch_frames() const noexcept { return batch_frames_; }
  bool batch_requests() const noexcept { return batch_requests_; }
  // Skips what is left of a refused frame; false while bytes of it are still to come.
  bool skip_refused() noexcept { return skip_ == 0 || skip_some(); }
  bool skipping() const noexcept { return skip_ != 0; }
  // Registers a grown buffer with server_memory, which asks for it back (called once the
  // buffer is larger than read_buffer_size).
  void offer_grown_buffer();
  bool reading() const noexcept {
    return read_ != read_state::idle && read_ != read_state::yielded;
  }
  bool grown_frame_waits() const noexcept;

  // Makes room for the rest of a frame that has begun to arrive: grows the buffer with the
  // bytes received (at most about twice them), never to what the header merely claims.
  // Or waits for memory, or refuses the frame and skips its bytes as they come.
  void grow_for_frame(const protocol::frame_header& h);
  // Memory refused a read buffer or a call: stop reading until a release wakes us.
  void wait_for_memory(bool for_read, std::size_t need);
  // Someone waits for memory: an idle connection's grown buffer shrinks back to
  // read_buffer_size (a socket read in flight on it is cancelled first, then reissued); one
  // grown for a frame that stopped arriving is closed (see stall_grace).
  void reclaim();
  void closed_socket();  // gives the buffer back, forgets the holder registration

 private:
  void advance(phase p) noexcept {
    if (phase_ < p) phase_ = p;
  }
  void post_resume();
  // `was`: what the read was doing when it completed (reading, reclaiming or releasing).
  read_end read_not_plain(const std::error_code& ec, read_state was) noexcept;
  bool skip_some() noexcept;
  void resume_after_memory();
  void shrink_idle();
  // Takes the read buffer (charged first; without room it waits for read memory), then reads.
  void take_buffer();
  void on_readable(const std::error_code& ec);
  void give_back_buffer() noexcept;  // to this reactor's pool, with its charge

  server_connection& c_;
  phase phase_ = phase::open;
  read_state read_ = read_state::idle;
  bool resume_posted_ = false;  // the yielded batch's resume is queued (at most one)
  bool holding_ = false;        // its grown buffer is registered with server_memory
  // Bytes of a refused frame still to be discarded as they arrive (a frame that could never
  // fit the memory limit: answered message_too_large, then skipped, not stored).
  std::uint64_t skip_ = 0;
  std::uint64_t batch_frames_ = 0;     // RPC frames taken by the batch being processed
  bool batch_requests_ = false;        // ... of which requests (activity, for idle_timeout)
  bool in_batch_ = false;              // its frames are being acted on
  std::size_t batch_start_bytes_ = 0;  // replies queued when the batch began (turn budget)
  asio::cancellation_signal read_cancel_;
};

}  // namespace corvid::detail
