// A server connection's stream port (stream_port.hpp): stream frames from the client routed
// to their calls, items and credit out, and idle streams ended. docs/architecture.md,
// "Streams".
#include <stdexcept>
#include <string>

#include "corvid/detail/stream_link.hpp"
#include "corvid/server/request_context.hpp"

#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {

void server_connection::end_idle_streams(time_point now) {
  const auto limit = core_.config.stream_idle_timeout;
  bool ended = false;
  running_.for_each([&](request_context* c) {
    stream_link* s = request_context_access::stream(*c);
    if (s == nullptr || c->cancelled()) return;
    if (s->moved != s->moved_at_look || s->still_since == time_point{}) {
      s->moved_at_look = s->moved;
      s->still_since = now;
    } else if (now - s->still_since >= limit) {
      s->on_idle(limit);
      ended = true;
    }
  });
  if (ended) flush();
}

bool server_connection::on_stream_frame(const protocol::frame_header& h, const char* payload) {
  request_context* ctx = running_.find(h.request_id);
  stream_link* link = ctx == nullptr ? nullptr : request_context_access::stream(*ctx);
  if (link == nullptr) return true;  // its stream has ended: the client learns from its reply
  if ((h.flags & protocol::must_understand_flags) != 0) [[unlikely]] {
    // No must-understand bit of a stream frame is known: what the frame means is unknown, so
    // the stream cannot go on (other calls can: the frame's lengths are good).
    reply_error(h.request_id, rpc_errc::bad_request, protocol::describe_unknown_must_understand(h));
    request_context_access::cancel(*ctx);
    return true;
  }
  switch (h.type) {
    case protocol::msg_type::stream_item: {
      const std::size_t cost = protocol::stream_item_cost(h.body_length);
      if (verdict v = adm_.admit_item(cost); !v.admitted()) [[unlikely]] {
        if (v.what == verdict::kind::pause) {
          pause_for(v);
          return false;
        }
        reply_error(h.request_id, v.code, v.message);  // the item is dropped
        request_context_access::cancel(*ctx);
        return true;
      }
      link->on_item(std::string_view(payload, h.body_length));
      break;
    }
    case protocol::msg_type::stream_end:
      link->on_writes_closed();
      break;
    default:  // stream_credit
      link->on_credit(h.credit);
      break;
  }
  return true;
}

bool server_connection::admit_stream(std::uint64_t request_id) {
  if (verdict v = adm_.open_stream(); !v.admitted()) {
    reply_error(request_id, v.code, v.message);
    return false;
  }
  // Its idle check: the regular one may be armed for later than a quarter of the limit.
  if (core_.config.stream_idle_timeout.count() > 0 && timer_) {
    const time_point look = live_.next_stream_look(std::chrono::steady_clock::now());
    if (look < timer_->expiry()) recheck_at(look);
  }
  return true;
}

outbound_queue* server_connection::begin_item(std::uint64_t request_id, std::size_t frame_bytes) {
  const std::size_t body = frame_bytes - protocol::header_size;
  if (body > core_.config.max_frame_size) {
    throw std::length_error("stream item of " + std::to_string(body) +
                            " bytes exceeds max_frame_size " +
                            std::to_string(core_.config.max_frame_size));
  }
  // Reserved like a reply. Refused, the stream waits for the queue to drain — unless nothing
  // is queued or being written, when no drain would come: then the server itself has no
  // memory for it, and the item fails like a reply would (it is never queued uncharged).
  if (!mem_.reserve_reply(frame_bytes, queued_reply_bytes())) {
    mem_.release_credit();
    if (!mem_.reserve_reply(frame_bytes, queued_reply_bytes())) {
      if (writing_ || !pending_.empty()) return nullptr;
      throw std::runtime_error("stream item of " + std::to_string(body) +
                               " bytes not queued: the server is at its memory limit");
    }
  }
  reply_mark_ = pending_.mark();
  reply_id_ = request_id;
  reply_open_ = true;
  pending_.extend(protocol::header_size);
  return &pending_;
}

void server_connection::end_item(std::size_t owned_bytes) {
  const auto body = static_cast<std::uint32_t>(pending_.mark() - reply_mark_ -
                                               protocol::header_size + owned_bytes);
  protocol::encode_header(protocol::make_item(reply_id_, body), pending_.at(reply_mark_));
  reply_open_ = false;
  frame_queued();
}

void server_connection::send_credit(std::uint64_t request_id, std::uint32_t bytes) {
  if (closed_) return;
  append_header_frame(pending_, protocol::make_credit(request_id, bytes));
  if (!dispatching_) flush();
}

void server_connection::wake_writable() {
  if (streams_.writable_waiting() && !mem_.replies_full(queued_reply_bytes())) {
    streams_.wake_writable();
  }
}

void server_connection::wait_written(stream_link* link) {
  if (closed_) {
    link->on_written();  // nothing queued now will be written
    return;
  }
  streams_.wait_written(link);
}

}  // namespace corvid::detail
