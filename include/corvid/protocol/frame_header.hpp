#pragma once
// The fixed 32-byte frame header (docs/protocol.md has the byte layout and test vectors).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "corvid/error.hpp"
#include "corvid/export.hpp"

namespace corvid::protocol {

inline constexpr std::uint8_t magic0 = 'C';
inline constexpr std::uint8_t magic1 = 'V';
// 2: evolvable structs in bodies (docs/codec.md) and the signature fingerprint at offset 6.
// 3: the must-understand flag bits (below). Only a frame that sets one is sent as version 3;
// every other frame is still sent as base_version, so a peer that speaks only version 2 keeps
// working for every call that needs nothing it cannot read, and refuses (bad_version) the
// ones that do. Receivers accept both and apply the must-understand rule to both.
inline constexpr std::uint8_t current_version = 3;  // the highest spoken
inline constexpr std::uint8_t base_version = 2;     // sent when no must-understand bit is set
inline constexpr std::size_t header_size = 32;
inline constexpr std::uint32_t default_max_frame_size = 64u << 20;  // body + attachment

enum class msg_type : std::uint8_t {
  request = 1,
  response = 2,
  cancel = 3,  // client → server: the caller gave up on request_id (explicit cancel, timeout)
  ping = 4,    // either side: are you there? Answered with a pong carrying the same id.
  pong = 5,
  // client → server as a connection's first frame, and the server's answer: RDMA queue-pair
  // addresses (docs/protocol.md, "RDMA connections").
  rdma_setup = 6,
  // Streams (docs/protocol.md, "Streams"), all naming the stream by its request id:
  stream_item = 7,    // either side: one item of the stream, its encoding as the body
  stream_end = 8,     // client → server: the client writes no more items (status 0)
  stream_credit = 9,  // either side: the receiver grants the sender `timeout_ms` more bytes
};
inline constexpr std::uint8_t max_msg_type = 9;
// Flag bits 0-3 are must-understand: a receiver that does not know a set one for the frame's
// kind refuses the frame (its meaning depends on the bit: a trace context shifts a request's
// arguments by 25 bytes). Bits 4-7 are optional: receivers ignore the ones they do not know.
inline constexpr std::uint8_t must_understand_flags = 0x0F;
// Requests: the body starts with the caller's trace context (docs/protocol.md, "Trace
// context"). Must-understand.
inline constexpr std::uint8_t flag_trace = 0x01;
// Requests and responses: the body holds a call metadata block (after the trace context, if
// any; docs/protocol.md, "Call metadata"). Must-understand.
inline constexpr std::uint8_t flag_metadata = 0x08;
// Requests, responses and stream items: the payload is zstd-compressed (docs/protocol.md,
// "Compression"); what it inflates to is the frame as it would have been sent without the bit.
// Must-understand. Bit 1 is unassigned.
inline constexpr std::uint8_t flag_compressed = 0x04;
// Requests: the sender accepts compressed responses and stream items; responses: the sender
// accepts compressed requests and stream items. Optional (bit 4): a peer that does not know it
// ignores it and is never sent a compressed frame.
inline constexpr std::uint8_t flag_accepts_compressed = 0x10;
// Bytes a stream's server may send before the client grants any (the client's window starts
// there; a client with a larger one grants the rest as it reads).
inline constexpr std::uint32_t initial_stream_credit = 256u << 10;
// What one item costs of the receiver's credit: its header and payload.
constexpr std::size_t stream_item_cost(std::size_t payload) noexcept {
  return header_size + payload;
}

struct frame_header {
  msg_type type = msg_type::request;
  std::uint8_t flags = 0;
  rpc_errc status = rpc_errc::ok;
  // Requests: the caller's signature fingerprint of the function (protocol/signature.hpp),
  // 0 = not stated (the server then does not check it). Zero in other frames.
  std::uint16_t signature = 0;
  std::uint64_t request_id = 0;
  std::uint32_t function_id = 0;
  std::uint32_t body_length = 0;
  std::uint32_t attachment_length = 0;
  // Requests: the caller's remaining time budget in ms (0 = none). The server drops a request
  // whose budget ran out before its handler could start. Zero in responses.
  std::uint32_t timeout_ms = 0;
  // Fields of one frame kind each, at the offset of a request's field that kind has no use
  // for (docs/protocol.md, "Header fields by frame kind"): stream_credit: the bytes granted
  // (offset 28); pong: the answering server's reactor count, 0 = not stated (offset 16).
  std::uint32_t credit = 0;
  std::uint32_t reactors = 0;

  std::size_t payload_size() const noexcept { return std::size_t{body_length} + attachment_length; }
  std::size_t frame_size() const noexcept { return header_size + payload_size(); }
};

enum class header_errc : std::uint8_t {
  ok,
  bad_magic,    // first two bytes are not "CV"
  bad_version,  // a version this build does not speak
  bad_type,     // an unknown message type
  too_large,    // body + attachment exceed the receiver's limit
};
CORVID_API std::string_view to_string(header_errc e) noexcept;

// The must-understand bits this build knows for frames of `type`.
constexpr std::uint8_t known_must_understand(msg_type type) noexcept {
  switch (type) {
    case msg_type::request:
      return flag_trace | flag_metadata | flag_compressed;
    case msg_type::response:
      return flag_metadata | flag_compressed;
    case msg_type::stream_item:
      return flag_compressed;
    default:
      return 0;
  }
}
// The must-understand bits of `h` that this build does not know for its kind: 0 for a frame
// it may act on. Receivers test `flags & must_understand_flags` first, so the frames that set
// none (nearly all) cost one test.
constexpr std::uint8_t unknown_must_understand(const frame_header& h) noexcept {
  return h.flags & must_understand_flags &
         static_cast<std::uint8_t>(~known_must_understand(h.type));
}
// Why such a frame is refused: "unknown must-understand flag bit 0x02 (flags 0x03)", the
// lowest unknown bit and the whole byte. Both peers' messages read the same.
CORVID_API std::string describe_unknown_must_understand(const frame_header& h);

// Writes the header's 32 bytes at `out`: version 3 if it sets a must-understand bit, else 2.
CORVID_API void encode_header(const frame_header& h, char* out) noexcept;
// Parses 32 bytes at `in`. On too_large, `out` is still filled (so the reply can name the
// request id); on other errors its contents are unspecified.
CORVID_API header_errc decode_header(const char* in, frame_header& out,
                                     std::uint32_t max_payload) noexcept;

}  // namespace corvid::protocol
