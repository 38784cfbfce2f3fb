#pragma once
// The stream port of a server connection: a stream's items out, its credit and window, and
// what the connection holds for it. Reactor thread unless noted.
#include <cstddef>
#include <cstdint>

#include "corvid/detail/outbound_queue.hpp"
#include "corvid/protocol/frame_header.hpp"

namespace corvid::detail {

class stream_link;

// A stream's side of the connection: its items out, its credit, its window, and what the
// connection holds for it.
class stream_port {
 public:
  virtual ~stream_port() = default;

  // An item frame of stream `request_id`, like begin_reply/end_reply: encode the item into
  // the returned queue, then end_item(). Null when the connection's queue has no room for it
  // now: wait_writable() then tells the stream when it has. Throws std::length_error for an
  // item larger than max_frame_size, and std::runtime_error when nothing is queued and the
  // server has no memory for it (no write would ever make room).
  virtual outbound_queue* begin_item(std::uint64_t request_id, std::size_t frame_bytes) = 0;
  // `owned_bytes`: what the item appended as owned or borrowed segments (append_owned,
  // append_borrowed), which the queue's mark does not count.
  virtual void end_item(std::size_t owned_bytes) = 0;
  // Grants the client `bytes` more credit on stream `request_id`.
  virtual void send_credit(std::uint64_t request_id, std::uint32_t bytes) = 0;
  // link->on_writable() once the queued replies drain (once per call of this).
  virtual void wait_writable(stream_link* link) = 0;
  virtual void forget_writable(stream_link* link) noexcept = 0;
  // Tells `link` (on_written) once everything queued so far has been written, or will never
  // be (the connection closed): its borrowed item is no longer referenced.
  virtual void wait_written(stream_link* link) = 0;
  // A stream opens on this connection: false (and the request answered server_busy) at
  // server_config::max_streams_per_connection. Each true is matched by stream_closed().
  virtual bool admit_stream(std::uint64_t request_id) { return request_id != 0; }
  // The credit window a stream grants its client (server_config::stream_window).
  virtual std::size_t stream_window() const noexcept { return protocol::initial_stream_credit; }
  // What that window may grow to while the stream's handler keeps up with its client
  // (server_config::max_stream_window; stream_inbox says when).
  virtual std::size_t max_stream_window() const noexcept { return stream_window(); }
  // A stream's window grows by `bytes`: how much of that the connection allows (all the
  // connection's streams together grow by a bounded amount). Any thread.
  virtual std::size_t reserve_stream_growth(std::size_t bytes) noexcept {
    static_cast<void>(bytes);
    return 0;
  }
  // A stream that grew by `bytes` has ended. Reactor thread.
  virtual void release_stream_growth(std::size_t bytes) noexcept { static_cast<void>(bytes); }
  virtual void stream_closed() noexcept {}
  // A stream's producer parks holding an item its client has granted no credit for: the
  // item's bytes are charged to the connection before the producer waits with it, and
  // given back (release_items) once it is queued or dropped. False = no memory for it: the
  // stream ends with server_busy and the item is freed at once.
  virtual bool hold_item(std::size_t bytes) noexcept {
    static_cast<void>(bytes);
    return true;
  }
  // Items the connection charged as they arrived (stream_item_cost each), or a producer's
  // held item (hold_item), left the stream. Reactor thread.
  virtual void release_items(std::size_t cost) noexcept = 0;
};

}  // namespace corvid::detail
