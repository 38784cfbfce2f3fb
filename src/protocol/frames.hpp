#pragma once
// Named builders, one per frame kind, so that the wire format reads from the code: each sets
// the fields its kind uses (docs/protocol.md, "Header fields by frame kind") and nothing else.
// encode_header() writes them.
#include <cstdint>

#include "corvid/protocol/frame_header.hpp"

namespace corvid::protocol {

struct request_fields {
  std::uint64_t id = 0;
  std::uint32_t function_id = 0;
  std::uint16_t signature = 0;
  std::uint32_t body = 0;
  std::uint32_t attachment = 0;
  std::uint32_t timeout_ms = 0;
  std::uint8_t flags = 0;
};
inline frame_header make_request(const request_fields& f) noexcept {
  frame_header h;
  h.type = msg_type::request;
  h.flags = f.flags;
  h.request_id = f.id;
  h.function_id = f.function_id;
  h.signature = f.signature;
  h.body_length = f.body;
  h.attachment_length = f.attachment;
  h.timeout_ms = f.timeout_ms;
  return h;
}
inline frame_header make_response(std::uint64_t id, std::uint32_t body = 0,
                                  std::uint32_t attachment = 0) noexcept {
  frame_header h;
  h.type = msg_type::response;
  h.request_id = id;
  h.body_length = body;
  h.attachment_length = attachment;
  return h;
}
// An error reply: `body` is the codec string of its message.
inline frame_header make_error(std::uint64_t id, rpc_errc code, std::uint32_t body) noexcept {
  frame_header h = make_response(id, body);
  h.status = code;
  return h;
}
inline frame_header make_item(std::uint64_t stream, std::uint32_t body) noexcept {
  frame_header h;
  h.type = msg_type::stream_item;
  h.request_id = stream;
  h.body_length = body;
  return h;
}
inline frame_header make_stream_end(std::uint64_t stream) noexcept {
  frame_header h;
  h.type = msg_type::stream_end;
  h.request_id = stream;
  return h;
}
inline frame_header make_credit(std::uint64_t stream, std::uint32_t bytes) noexcept {
  frame_header h;
  h.type = msg_type::stream_credit;
  h.request_id = stream;
  h.credit = bytes;
  return h;
}
inline frame_header make_ping(std::uint64_t id) noexcept {
  frame_header h;
  h.type = msg_type::ping;
  h.request_id = id;
  return h;
}
// A server's pong states its reactor count (a client pool opens up to one connection per
// reactor); a client's pong states 0.
inline frame_header make_pong(std::uint64_t id, std::uint32_t reactors = 0) noexcept {
  frame_header h;
  h.type = msg_type::pong;
  h.request_id = id;
  h.reactors = reactors;
  return h;
}
inline frame_header make_cancel(std::uint64_t id) noexcept {
  frame_header h;
  h.type = msg_type::cancel;
  h.request_id = id;
  return h;
}
// The RDMA handshake's frame, one each way (docs/protocol.md, "RDMA"): request id 1; an
// answer's error `status` comes with a codec string of its message as the body.
inline constexpr std::uint64_t rdma_setup_id = 1;
inline frame_header make_rdma_setup(std::uint32_t body, rpc_errc status = rpc_errc::ok) noexcept {
  frame_header h;
  h.type = msg_type::rdma_setup;
  h.status = status;
  h.request_id = rdma_setup_id;
  h.body_length = body;
  return h;
}

}  // namespace corvid::protocol
