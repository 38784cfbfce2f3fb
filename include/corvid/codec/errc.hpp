#pragma once
// decode_errc: why decoding failed. Decoding untrusted bytes reports errors by value (never
// throws), so the RPC layer can turn any of these into a bad_request without try/catch.
#include <cstdint>
#include <string_view>

namespace corvid::codec {

enum class decode_errc : std::uint8_t {
  ok = 0,
  truncated,        // the input ended in the middle of a value
  invalid_value,    // a byte sequence no encoder produces: bool/optional tag not 0/1,
                    // non-minimal varint, duplicate map/set key
  length_overflow,  // a varint above UINT32_MAX or over 5 bytes, or a count that cannot fit in
                    // the bytes that remain
  trailing_bytes,   // decode() consumed a whole value but input was left over
  over_budget,      // decoding with a decode_budget: the next allocation would pass its limit
                    // (nothing was allocated for it). Appended, so older values keep their numbers
  unknown_alternative,  // a variant index past this build's alternatives, or a closed enum's
                        // value it has no enumerator for: sent by a newer peer, or corrupt
};

// Short stable name, e.g. "length_overflow"; over_budget gets a sentence, since a peer sees it
// in a bad_request reply and "over_budget" alone does not say what was over.
inline std::string_view to_string(decode_errc e) noexcept {
  switch (e) {
    case decode_errc::ok:
      return "ok";
    case decode_errc::truncated:
      return "truncated";
    case decode_errc::invalid_value:
      return "invalid_value";
    case decode_errc::length_overflow:
      return "length_overflow";
    case decode_errc::trailing_bytes:
      return "trailing_bytes";
    case decode_errc::over_budget:
      return "decoded value needs more memory than the decode budget allows";
    case decode_errc::unknown_alternative:
      return "a variant alternative or enum value this build does not know (a newer peer's?)";
  }
  return "unknown";
}

}  // namespace corvid::codec
