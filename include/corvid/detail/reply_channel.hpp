#pragma once
// The narrow interface handler templates use to answer on a server connection. Everything
// here runs on the connection's reactor thread.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <asio/io_context.hpp>

#include "corvid/detail/outbound_queue.hpp"
#include "corvid/error.hpp"
#include "corvid/protocol/frame_header.hpp"

namespace corvid {
class request_context;
}

namespace corvid::detail {

class stream_link;
struct blocking_job;

class reply_channel : public std::enable_shared_from_this<reply_channel> {
 public:
  virtual ~reply_channel() = default;

  // Starts a success reply to `request_id` whose frame will be about `frame_bytes` long
  // (header, encoded result, attachment): encode the result into the returned queue, then
  // call end_reply(). Between the two nothing else may be queued. Null when the reply may not
  // be queued (no memory for it, or the connection's reply queue is full): the channel has
  // then queued an error reply to the request in its place.
  virtual outbound_queue* begin_reply(std::uint64_t request_id, std::size_t frame_bytes) = 0;
  // Finishes the reply begun last, appending the context's response attachment, if any.
  virtual void end_reply(request_context* ctx) = 0;
  // An error reply: the body carries `message` (encoded as a string, cut to a bounded
  // length).
  virtual void reply_error(std::uint64_t request_id, rpc_errc code, std::string_view message) = 0;

  // Memory for the request being dispatched: the decoder's allocations and a coroutine call's
  // state and request copy are taken from this allowance (charge_call) before they are made.
  // Returns the allowance after asking the server's trackers for up to `want` bytes in all
  // (0: just tell).
  virtual std::size_t call_allowance(std::size_t want) noexcept = 0;
  virtual void charge_call(std::size_t bytes) noexcept = 0;

  // Coroutine handlers in flight; stop() waits for them before closing. The connection keeps
  // their contexts, to cancel one when a cancel frame names it (or all when it closes).
  virtual void call_started(request_context& ctx) noexcept = 0;
  virtual void call_finished(request_context& ctx) noexcept = 0;

  // Streams. An item frame of stream `request_id`, like begin_reply/end_reply: encode the item
  // into the returned queue, then end_item(). Null when the connection's queue has no room
  // for it now: wait_writable() then tells the stream when it has. Throws std::length_error
  // for an item larger than max_frame_size.
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
  // Items the connection charged as they arrived (stream_item_cost each) left a stream's
  // inbox. Reactor thread.
  virtual void release_items(std::size_t cost) noexcept = 0;
  // A blocking call, started (call_started): queued for a worker thread. False = refused
  // (the worker queue is full): the channel has queued a server_busy reply to `request_id`,
  // and the caller ends the call (call_finished). A channel without workers refuses all.
  virtual bool submit_blocking(blocking_job& job, std::uint64_t request_id) {
    (void)job;
    reply_error(request_id, rpc_errc::server_busy, "no worker threads for blocking handlers");
    return false;
  }

  // A traced call (request_context::trace()) ended: its span goes to the user's exporter.
  virtual void span_ended(request_context& ctx) noexcept { (void)ctx; }

  virtual asio::io_context& reactor() noexcept = 0;
  virtual std::string peer_address() const = 0;
};

}  // namespace corvid::detail
