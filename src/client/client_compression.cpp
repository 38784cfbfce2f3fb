// A client connection's compressed frames (docs/protocol.md, "Compression"): requests it
// compresses once the server has said it accepts them, and replies and stream items it
// inflates. Out of the common path: a connection without compression never comes here.
#include <algorithm>
#include <new>
#include <optional>
#include <string>

#include "../protocol/compression.hpp"
#include "client_connection.hpp"
#include "client_metrics_access.hpp"

namespace corvid::detail {

void client_connection::server_accepts_compressed() {
  std::lock_guard lk(mutex_);
  compress_from_ =
      std::max<std::size_t>(config_.compression.min_bytes, protocol::compressed_head_size + 1);
}

std::uint8_t client_connection::compress_locked(std::size_t mark, std::size_t& body,
                                                std::string_view& attachment) {
  std::string packed;
  try {
    const std::string_view plain(pending_.at(mark + protocol::header_size), body);
    if (!protocol::deflate(plain, attachment, config_.compression.level, packed)) return 0;
  } catch (const std::bad_alloc&) {
    return 0;  // sent as it is
  }
  pending_.rollback(mark + protocol::header_size);
  pending_.append(packed);
  body = packed.size();
  attachment = {};
  return protocol::flag_compressed;
}

bool client_connection::compress_parked(parked_request& p, std::string_view attachment) {
  std::string frame(protocol::header_size, '\0');
  try {
    const std::string_view plain = std::string_view(p.frame).substr(protocol::header_size);
    if (!protocol::deflate(plain, attachment, config_.compression.level, frame)) return false;
  } catch (const std::bad_alloc&) {
    return false;
  }
  p.frame = std::move(frame);
  return true;
}

void client_connection::reply_role::fail_frame_call(const protocol::frame_header& h, rpc_error e) {
  call_base* call = nullptr;
  bool deferred = false;
  {
    std::lock_guard lk(c.mutex_);
    call_base* found = c.calls_.find(h.request_id);
    const bool response = h.type == protocol::msg_type::response;
    const bool of_stream =
        h.type == protocol::msg_type::stream_item || h.type == protocol::msg_type::stream_credit;
    if (found != nullptr && (response || (of_stream && found->as_stream() != nullptr))) {
      call = c.take_call(h.request_id);
      call_slot& slot = slot_of(*call);
      deferred = slot.completion_deferred = slot.pinned;
      metrics::client_recorder::ended(slot, e.code(), h.frame_size(), c.read_at_);
      if (!response && c.config_.send_cancel && c.open_locked())
        c.queue_control_locked(protocol::make_cancel(h.request_id));  // on_read flushes
    }
  }
  if (call != nullptr) {
    call->set_error(std::move(e));
    finish_call(call, deferred);
  }
}

frame_verdict client_connection::reply_role::on_compressed_frame(const protocol::frame_header& h,
                                                                 const char* body) {
  const std::string_view payload(body, h.body_length);
  const std::optional<protocol::inflated_sizes> sizes = protocol::read_inflated_sizes(payload);
  std::string why;
  if (h.attachment_length != 0) {
    why = "a compressed frame with an attachment outside its compressed payload";
  } else if (!sizes) {
    why = "a compressed frame shorter than its 8-byte head";
  } else if (sizes->total() > c.config_.max_frame_size) {
    // Refused from its head alone: nothing is allocated for what it claims.
    why = "a compressed frame declares " + std::to_string(sizes->total()) +
          " bytes inflated, over max_frame_size " + std::to_string(c.config_.max_frame_size);
  } else {
    try {
      why = protocol::inflate(payload, c.inflated_);
    } catch (const std::bad_alloc&) {
      why = "out of memory inflating a compressed frame";
    }
  }
  if (!why.empty()) {
    fail_frame_call(h, {rpc_errc::protocol_error, "bad compressed reply: " + why});
    return frame_verdict::next;
  }
  protocol::frame_header plain = h;
  plain.flags = static_cast<std::uint8_t>(h.flags & ~protocol::flag_compressed);
  plain.body_length = sizes->body;
  plain.attachment_length = sizes->attachment;
  const frame_verdict v = on_flagged_frame(plain, c.inflated_.data());
  if (c.inflated_.capacity() > 64 * 1024) {
    c.inflated_ = std::string();  // a big reply's room is not kept
  } else {
    c.inflated_.clear();
  }
  return v;
}

}  // namespace corvid::detail
