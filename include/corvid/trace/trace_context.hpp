#pragma once
// W3C Trace Context (https://www.w3.org/TR/trace-context/): the trace a call belongs to and
// the span that made it, as carried by the `traceparent` header of HTTP and by corvid's
// request frames (docs/protocol.md, "Trace context").
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "corvid/export.hpp"

namespace corvid {

struct CORVID_API trace_context {
  std::array<std::uint8_t, 16> trace_id{};
  // The span this context names. A call made in this context is that span's child: the
  // server's span for it gets this id as its parent.
  std::array<std::uint8_t, 8> span_id{};
  std::uint8_t flags = 0;  // W3C trace-flags; bit 0: sampled

  // W3C: a context whose trace id or span id is all zeros is invalid (and not propagated).
  bool valid() const noexcept;
  bool sampled() const noexcept { return (flags & 1) != 0; }
  // "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>", lower case.
  std::string traceparent() const;
  // Parses a traceparent header value of version 00 (or of a later version, whose first four
  // fields are read as the W3C rules say). Nullopt when malformed or invalid.
  static std::optional<trace_context> parse(std::string_view traceparent) noexcept;
  // A new trace: random trace and span ids.
  static trace_context new_trace(bool sampled = true) noexcept;
  // A new span in this trace: the same trace id and flags, a random span id.
  trace_context child() const noexcept;

  friend bool operator==(const trace_context&, const trace_context&) = default;
};

}  // namespace corvid
