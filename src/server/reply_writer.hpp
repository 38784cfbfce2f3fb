#pragma once
// A server connection's outgoing side: the replies, error replies, stream items and control
// frames it queues, each reserved against the connection's memory before it is encoded, and
// the write that carries them. During a batch the replies wait for its end, so every reply
// to one read leaves in one write; afterwards they leave at once. Reactor thread only.
//
// It is the connection's reply_sink, and the connection's one base that holds state: a
// handler's reply (the hot path) goes through one virtual call straight here, with the
// connection reached by a static cast rather than a pointer held.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

#include "corvid/detail/outbound_queue.hpp"
#include "corvid/detail/reply_sink.hpp"
#include "corvid/error.hpp"
#include "corvid/protocol/frame_header.hpp"

#include "../transport/frame_stream.hpp"

namespace corvid {
class request_context;
}

namespace corvid::detail {

class server_connection;

class reply_writer : public reply_sink {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // reply_sink: a reply is reserved and room left for its header (written by end_reply, once
  // the lengths are known); null = refused, and the error reply saying why is queued instead.
  outbound_queue* begin_reply(std::uint64_t request_id, std::size_t frame_bytes) final;
  void end_reply(request_context* ctx, std::uint8_t flags) final;
  // Error frames are queued even past the reply limits (a call must end with its error), so
  // they are kept small; the dispatch loop's pause at those limits bounds how many queue up.
  void reply_error(std::uint64_t request_id, rpc_errc code, std::string_view message) final;
  // A stream item: reserved like a reply; null = wait for the queue to drain.
  outbound_queue* begin_item(std::uint64_t request_id, std::size_t frame_bytes);
  void end_item(std::size_t owned_bytes);
  // A header-only frame (credit, ping, pong).
  void queue_control(const protocol::frame_header& h);
  // What a bypassing frame (an RDMA setup answer) appends directly.
  outbound_queue& queue() noexcept { return pending_; }

  // Starts a write of what is queued, if none is in flight. `now`: the time, if the caller
  // has just read the clock (the write's stall clock starts there).
  void flush(time_point now = {});
  bool writing() const noexcept { return writing_; }
  bool idle() const noexcept { return !writing_ && pending_.empty(); }
  // Replies queued or being written: what the reply limits count.
  std::size_t queued_bytes() const noexcept {
    return pending_.size() + write_frames_.sending().size();
  }
  std::size_t pending_bytes() const noexcept { return pending_.size(); }
  void settle() noexcept;
  // Replies its peer does not take while others wait for memory: registered with
  // server_memory, which asks for them back (reclaim) when someone waits.
  void hold();
  void reclaim();
  void closed();  // forgets the holder registration
  // Calls that interceptors observe (server_interceptor::observes_end) are open: each reply
  // and error reply tells the connection's call_check which call ended.
  void observe_ends(bool on) noexcept { observing_ = on; }
  bool observes_ends() const noexcept { return observing_; }
  // The client said it accepts compressed frames (protocol::flag_accepts_compressed on a
  // request): with the server's compression on, replies of at least its min_bytes are
  // compressed from now on, and every reply says the server accepts them too.
  void peer_accepts_compressed() noexcept;

 protected:
  // `frames` is the connection's member, not yet constructed: only its address is kept.
  explicit reply_writer(frame_stream& frames) noexcept : write_frames_(frames) {}
  ~reply_writer() override = default;

 private:
  server_connection& conn() noexcept;
  // begin_reply when the reply credit is short (out of the hot path): gives unused call
  // credit back and tries again; false = refused, and the error reply saying why is queued.
  [[gnu::cold, gnu::noinline]] bool retry_reply(std::uint64_t request_id, std::size_t frame_bytes);
  void frame_queued();
  // end_reply's body: the header written and the attachment queued behind the reply.
  [[gnu::always_inline]] inline void queue_reply(request_context* ctx, std::uint8_t flags);
  // end_reply on a connection whose client accepts compression: compressed from
  // compress_from_ bytes, and saying the server accepts it too.
  [[gnu::cold, gnu::noinline]] void end_negotiated_reply(request_context* ctx, std::uint8_t flags);
  // A reply of compress_from_ bytes or more to a client that accepts compression: true when
  // it went compressed (and is queued), false to queue it as it is.
  [[gnu::cold, gnu::noinline]] bool compress_reply(request_context* ctx, std::uint8_t flags,
                                                   std::size_t body, std::size_t attachment);
  void write_each();  // coalesce_writes off: one blocking write per frame
  void on_write(const std::error_code& ec, std::size_t n);

  frame_stream& write_frames_;  // the connection's: the write in flight
  outbound_queue pending_;      // replies queued while a write is in flight
  std::size_t mark_ = 0;        // where the open reply's frame begins
  std::uint64_t id_ = 0;        // ... and its request id
  bool open_ = false;           // a reply or item is being encoded
  bool writing_ = false;
  bool holding_ = false;    // registered with server_memory::add_holder
  bool observing_ = false;  // observe_ends
  // flag_accepts_compressed once the client asked for compression (then replies of
  // compress_from_ bytes or more are compressed); 0 until then: one test per reply.
  std::uint8_t reply_flags_ = 0;
  std::size_t compress_from_ = static_cast<std::size_t>(-1);
};

}  // namespace corvid::detail
