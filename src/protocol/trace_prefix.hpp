#pragma once
// A request's trace context on the wire (docs/protocol.md, "Trace context"): with
// protocol::flag_trace set, the body starts with these 25 bytes, counted in its length.
#include <cstddef>
#include <cstring>

#include "corvid/trace/trace_context.hpp"

namespace corvid::protocol {

inline constexpr std::size_t trace_prefix_size = 16 + 8 + 1;  // trace id, parent span id, flags

inline void encode_trace_prefix(const trace_context& t, char* out) noexcept {
  std::memcpy(out, t.trace_id.data(), 16);
  std::memcpy(out + 16, t.span_id.data(), 8);
  out[24] = static_cast<char>(t.flags);
}

inline trace_context decode_trace_prefix(const char* in) noexcept {
  trace_context t;
  std::memcpy(t.trace_id.data(), in, 16);
  std::memcpy(t.span_id.data(), in + 16, 8);
  t.flags = static_cast<std::uint8_t>(in[24]);
  return t;
}

}  // namespace corvid::protocol
