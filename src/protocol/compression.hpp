#pragma once
// Per-message zstd (docs/protocol.md, "Compression"). A frame with protocol::flag_compressed
// carries, instead of its body and attachment,
//   u32 body length, u32 attachment length   (little-endian: what it inflates to)
//   one zstd frame of the body followed by the attachment
// with the header's body length counting all of it and its attachment length 0. The receiver
// reads the declared sizes first, checks them against its frame limit and charges them before
// it allocates anything, then inflates into exactly that room: a payload that would inflate
// to more, or to less, is refused, never followed.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corvid::protocol {

inline constexpr std::size_t compressed_head_size = 8;

struct inflated_sizes {
  std::uint32_t body = 0;
  std::uint32_t attachment = 0;
  std::size_t total() const noexcept { return std::size_t{body} + attachment; }
};

// The declared sizes at the front of a compressed payload; nullopt when it is shorter than
// its head.
std::optional<inflated_sizes> read_inflated_sizes(std::string_view payload) noexcept;

// Compresses `body` followed by `attachment` at zstd `level` and appends the head and the
// zstd frame to `out`. False (and `out` as it was) when that would not be smaller than the
// two uncompressed: the frame is then sent as it is.
bool deflate(std::string_view body, std::string_view attachment, int level, std::string& out);

// Inflates a compressed payload into `out` (resized to the declared total; the body first,
// then the attachment). An empty string on success, else why it was refused: a payload
// shorter than its head, a zstd error, or an inflated size other than the declared one.
// The caller has checked and charged the declared sizes (read_inflated_sizes) before.
std::string inflate(std::string_view payload, std::string& out);

// Bytes deflate may need beyond its inputs, at most (zstd's bound plus the head): what a
// sender reserves for the compressed copy of `bytes`.
std::size_t deflate_bound(std::size_t bytes) noexcept;

}  // namespace corvid::protocol
