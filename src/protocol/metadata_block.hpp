#pragma once
// Call metadata on the wire (docs/protocol.md, "Call metadata"): with protocol::flag_metadata
// set, a request's body (after its trace context) or a response's body starts with a block
//   u32 entry_bytes, u16 count, then `count` entries of u8 key length, key, u32 value
//   length, value
// all little-endian, entry_bytes counting the entries only. The receiver checks the whole
// block against its limits before it takes a view of one entry; nothing is allocated.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "corvid/call_metadata.hpp"
#include "corvid/error.hpp"

namespace corvid::protocol {

inline constexpr std::size_t metadata_head_size = 4 + 2;

struct metadata_limits {
  std::size_t max_entries = 64;
  std::size_t max_bytes = 8192;  // the whole block, its head included
};
inline constexpr metadata_limits default_metadata_limits{};

// What reading a block off the front of a body found.
struct metadata_read {
  rpc_errc code = rpc_errc::ok;  // bad_request (malformed), resource_exhausted (over a limit)
  std::string message;           // why, when code is not ok
  metadata_view entries;
  std::size_t consumed = 0;  // bytes of the body the block took, its head included
};

// Reads the block at the front of `body` (the bytes after the trace context). A block that
// is malformed (shorter than it says, entries that do not fill its length exactly, a count
// that disagrees, a key that is not a lowercase token) is bad_request; one over `limits`
// (its declared length, or its count) is resource_exhausted, found from the head alone.
metadata_read read_metadata(std::string_view body, const metadata_limits& limits);

// Bytes encode_metadata writes for `md` (metadata_head_size + its entries).
std::size_t metadata_wire_size(const metadata& md) noexcept;
// Writes the block for `md` at `out`, which has room for metadata_wire_size(md) bytes.
void encode_metadata(const metadata& md, char* out) noexcept;

}  // namespace corvid::protocol
