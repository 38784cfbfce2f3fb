#pragma once
// The reply sink of a server connection: where a handler's result or error goes. Reactor
// thread.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "corvid/detail/asio.hpp"
#include "corvid/detail/outbound_queue.hpp"
#include "corvid/error.hpp"
#include "corvid/server/peer_identity.hpp"

namespace corvid {
class request_context;
}

namespace corvid::detail {

// Answers: replies and error replies to requests, and the connection they travel on. A call
// that outlives its dispatch (coroutine, stream, blocking) must still answer, so it keeps
// the sink alive (shared_from_this); the sink's connection, and with it the call's budget and
// stream port (call_budget.hpp, stream_port.hpp), live as long.
class reply_sink : public std::enable_shared_from_this<reply_sink> {
 public:
  virtual ~reply_sink() = default;

  // Starts a success reply to `request_id` whose frame will be about `frame_bytes` long
  // (header, encoded result, attachment): encode the result into the returned queue, then
  // call end_reply(). Between the two nothing else may be queued. Null when the reply may not
  // be queued (no memory for it, or the connection's reply queue is full): the sink has then
  // queued an error reply to the request in its place.
  virtual outbound_queue* begin_reply(std::uint64_t request_id, std::size_t frame_bytes) = 0;
  // Finishes the reply begun last, appending the context's response attachment, if any.
  // `flags`: the reply header's flags (protocol::flag_metadata when the body begins with a
  // metadata block; 0 otherwise), stated by the caller so the sink tests nothing per reply.
  virtual void end_reply(request_context* ctx, std::uint8_t flags) = 0;
  // An error reply: the body carries `message` (encoded as a string, cut to a bounded
  // length).
  virtual void reply_error(std::uint64_t request_id, rpc_errc code, std::string_view message) = 0;
  // A traced call (request_context::trace()) ended: its span goes to the user's exporter.
  virtual void span_ended(request_context& ctx) noexcept { (void)ctx; }

  virtual asio::io_context& reactor() noexcept = 0;
  virtual std::string peer_address() const = 0;
  // Who the connection's peer proved to be (computed once, when the connection was set up).
  virtual const peer_identity& identity() const noexcept;
};

}  // namespace corvid::detail
