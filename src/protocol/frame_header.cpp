#include "corvid/protocol/frame_header.hpp"

#include <bit>
#include <cstdio>
#include <cstring>
#include <utility>

namespace corvid::protocol {
namespace {

// Little-endian stores and loads, independent of host byte order and alignment: one memcpy
// of the whole field (a plain move on x86), byte-swapped on a big-endian host. Byte by byte,
// the header's fields cost a third of the server's instructions per small call.
template <class T>
T to_le(T v) noexcept {
  if constexpr (std::endian::native == std::endian::big) {
    if constexpr (sizeof(T) == 2) return __builtin_bswap16(v);
    if constexpr (sizeof(T) == 4) return __builtin_bswap32(v);
    if constexpr (sizeof(T) == 8) return __builtin_bswap64(v);
  }
  return v;
}
template <class T>
void store_le(char* p, T v) noexcept {
  v = to_le(v);
  std::memcpy(p, &v, sizeof v);
}
template <class T>
T load_le(const char* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return to_le(v);
}
static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "a mixed-endian host has no byte swap for the wire's little-endian fields");

}  // namespace

std::string_view to_string(header_errc e) noexcept {
  switch (e) {
    case header_errc::ok:
      return "ok";
    case header_errc::bad_magic:
      return "bad magic (not a corvid stream)";
    case header_errc::bad_version:
      return "unsupported protocol version (this build speaks corvid protocol versions 2 and 3)";
    case header_errc::bad_type:
      return "unknown message type";
    case header_errc::too_large:
      return "frame exceeds the maximum size";
  }
  return "unknown header error";
}

std::string describe_unknown_must_understand(const frame_header& h) {
  const std::uint8_t unknown = unknown_must_understand(h);
  const unsigned lowest = unknown == 0 ? 0u : 1u << std::countr_zero(unknown);
  char msg[64];
  std::snprintf(msg, sizeof msg, "unknown must-understand flag bit 0x%02x (flags 0x%02x)", lowest,
                static_cast<unsigned>(h.flags));
  return msg;
}

// Layout (offsets in bytes): 0 magic "CV", 2 version, 3 type, 4 flags, 5 status,
// 6 signature fingerprint u16 (requests; reserved in version 1), 8 request id u64,
// 16 function id u32 (a pong: reactor count), 20 body length u32, 24 attachment length u32,
// 28 timeout ms u32 (a stream_credit: the bytes granted).
void encode_header(const frame_header& h, char* out) noexcept {
  out[0] = static_cast<char>(magic0);
  out[1] = static_cast<char>(magic1);
  // A peer of version 2 would take the bit for one it may ignore: version 3 makes it refuse.
  const bool must_understand = (h.flags & must_understand_flags) != 0;
  out[2] = static_cast<char>(must_understand ? current_version : base_version);
  out[3] = static_cast<char>(h.type);
  out[4] = static_cast<char>(h.flags);
  out[5] = static_cast<char>(h.status);
  store_le<std::uint16_t>(out + 6, h.signature);
  store_le<std::uint64_t>(out + 8, h.request_id);
  const bool pong = h.type == msg_type::pong;
  const bool credit = h.type == msg_type::stream_credit;
  store_le<std::uint32_t>(out + 16, pong ? h.reactors : h.function_id);
  store_le<std::uint32_t>(out + 20, h.body_length);
  store_le<std::uint32_t>(out + 24, h.attachment_length);
  store_le<std::uint32_t>(out + 28, credit ? h.credit : h.timeout_ms);
}

header_errc decode_header(const char* in, frame_header& out, std::uint32_t max_payload) noexcept {
  if (static_cast<std::uint8_t>(in[0]) != magic0 || static_cast<std::uint8_t>(in[1]) != magic1) {
    return header_errc::bad_magic;
  }
  const auto version = static_cast<std::uint8_t>(in[2]);
  if (version != base_version && version != current_version) return header_errc::bad_version;
  const auto type = static_cast<std::uint8_t>(in[3]);
  if (type < static_cast<std::uint8_t>(msg_type::request) || type > max_msg_type) {
    return header_errc::bad_type;
  }
  out.type = static_cast<msg_type>(type);
  out.flags = static_cast<std::uint8_t>(in[4]);
  out.status = static_cast<rpc_errc>(static_cast<std::uint8_t>(in[5]));
  out.signature = load_le<std::uint16_t>(in + 6);
  out.request_id = load_le<std::uint64_t>(in + 8);
  out.function_id = load_le<std::uint32_t>(in + 16);
  out.reactors = 0;
  out.body_length = load_le<std::uint32_t>(in + 20);
  out.attachment_length = load_le<std::uint32_t>(in + 24);
  out.timeout_ms = load_le<std::uint32_t>(in + 28);
  out.credit = 0;
  // The two kinds whose offsets 16 and 28 mean something else (docs/protocol.md, "Header
  // fields by frame kind"): off the request/response path, so one predictable branch.
  if (out.type >= msg_type::pong) [[unlikely]] {
    if (out.type == msg_type::pong) out.reactors = std::exchange(out.function_id, 0);
    if (out.type == msg_type::stream_credit) out.credit = std::exchange(out.timeout_ms, 0);
  }
  if (out.payload_size() > max_payload) return header_errc::too_large;
  return header_errc::ok;
}

}  // namespace corvid::protocol
