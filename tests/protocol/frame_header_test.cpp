// The 32-byte frame header: exact bytes out of encode_header, every field back out of
// decode_header, and every way decode_header refuses a header.
#include <cstring>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "wire_util.hpp"

namespace corvid::protocol::test {
namespace {

constexpr std::uint32_t u32_max = std::numeric_limits<std::uint32_t>::max();

// The format's constants are wire facts: pinned here so a change is a deliberate test edit.
static_assert(header_size == 32);
static_assert(magic0 == 'C' && magic1 == 'V' && current_version == 3 && base_version == 2);
static_assert(must_understand_flags == 0x0F && flag_trace == 0x01 && flag_metadata == 0x08);
static_assert(default_max_frame_size == 64u * 1024 * 1024);
static_assert(static_cast<int>(msg_type::request) == 1 &&
              static_cast<int>(msg_type::response) == 2);

std::string encoded(const frame_header& h) {
  std::string out(header_size, '\xff');  // stale bytes must not leak into reserved fields
  encode_header(h, out.data());
  return out;
}

struct header_case {
  frame_header h;
  const char* hex;
};

const header_case cases[] = {
    {{},
     "43 56 02 01 00 00 00 00  00 00 00 00 00 00 00 00  00 00 00 00  00 00 00 00"
     "  00 00 00 00  00 00 00 00"},
    {{.type = msg_type::response,
      .flags = 0xa5,
      .status = rpc_errc::handler_error,
      .signature = 0xbeef,
      .request_id = 0x0123456789abcdefull,
      .function_id = 0xdeadbeef,
      .body_length = 0x01020304,
      .attachment_length = 0x0a0b0c0d},
     // flags 0xa5 carry must-understand bits (0x05): sent as version 3.
     "43 56 03 02 a5 07 ef be  ef cd ab 89 67 45 23 01  ef be ad de  04 03 02 01"
     "  0d 0c 0b 0a  00 00 00 00"},
    {{.type = msg_type::request,
      .status = static_cast<rpc_errc>(0xff),
      .request_id = std::numeric_limits<std::uint64_t>::max(),
      .function_id = u32_max,
      .body_length = u32_max,
      .attachment_length = u32_max},
     "43 56 02 01 00 ff 00 00  ff ff ff ff ff ff ff ff  ff ff ff ff  ff ff ff ff"
     "  ff ff ff ff  00 00 00 00"},
};

void expect_same(const frame_header& a, const frame_header& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.signature, b.signature);
  EXPECT_EQ(a.request_id, b.request_id);
  EXPECT_EQ(a.function_id, b.function_id);
  EXPECT_EQ(a.body_length, b.body_length);
  EXPECT_EQ(a.attachment_length, b.attachment_length);
  EXPECT_EQ(a.timeout_ms, b.timeout_ms);
}

TEST(FrameHeader, EncodesExactBytes) {
  for (const auto& c : cases) EXPECT_EQ(hex(encoded(c.h)), hex(unhex(c.hex)));
}

TEST(FrameHeader, DecodeRoundTripsEveryField) {
  for (const auto& c : cases) {
    // Two maximal lengths exceed any 32-bit limit; too_large still fills every field.
    const auto want = c.h.payload_size() > u32_max ? header_errc::too_large : header_errc::ok;
    frame_header out;
    ASSERT_EQ(decode_header(unhex(c.hex).data(), out, u32_max), want) << c.hex;
    expect_same(out, c.h);
  }
}

TEST(FrameHeader, DecodesFromAnUnalignedBuffer) {
  const std::string bytes = "x" + unhex(cases[1].hex);
  frame_header out;
  ASSERT_EQ(decode_header(bytes.data() + 1, out, u32_max), header_errc::ok);
  expect_same(out, cases[1].h);
}

// Offset 6 is the signature fingerprint (reserved in version 1), offset 28 the request's
// timeout in ms (reserved before deadlines travelled on the wire). Flags are passed up
// undecoded; none has a meaning yet.
TEST(FrameHeader, SignatureAndTimeoutAndFlagsPassUp) {
  std::string bytes = unhex(cases[1].hex);
  for (int i : {6, 7, 28, 29, 30, 31}) bytes[i] = '\x5a';
  bytes[4] = '\xff';
  frame_header out;
  ASSERT_EQ(decode_header(bytes.data(), out, u32_max), header_errc::ok);
  frame_header want = cases[1].h;
  want.flags = 0xff;
  want.signature = 0x5a5a;
  want.timeout_ms = 0x5a5a5a5a;
  expect_same(out, want);
}

TEST(FrameHeader, SignatureAtOffset6) {
  std::string bytes(header_size, '\0');
  encode_header({.signature = 0x1234}, bytes.data());
  EXPECT_EQ(hex(bytes.substr(6, 2)), "34 12");
}

TEST(FrameHeader, TimeoutRoundTripsAtOffset28) {
  frame_header h;
  h.request_id = 7;
  h.timeout_ms = 30000;
  std::string bytes(header_size, '\0');
  encode_header(h, bytes.data());
  EXPECT_EQ(hex(bytes.substr(28, 4)), hex(std::string("\x30\x75\x00\x00", 4)));
  frame_header out;
  ASSERT_EQ(decode_header(bytes.data(), out, u32_max), header_errc::ok);
  EXPECT_EQ(out.timeout_ms, 30000u);
}

header_errc decode_with(std::size_t index, char value, std::uint32_t limit = u32_max) {
  std::string bytes = encoded({});
  bytes[index] = value;
  frame_header out;
  return decode_header(bytes.data(), out, limit);
}

TEST(FrameHeader, RejectsBadMagic) {
  EXPECT_EQ(decode_with(0, 'c'), header_errc::bad_magic);
  EXPECT_EQ(decode_with(1, 'v'), header_errc::bad_magic);
  EXPECT_EQ(decode_with(0, 'V'), header_errc::bad_magic);  // "VV"
  std::string http = "GET / HTTP/1.1\r\nHost: a\r\n\r\n.....";
  frame_header out;
  EXPECT_EQ(decode_header(http.data(), out, u32_max), header_errc::bad_magic);
}

// Version 1 (no signature, structs without lengths) and versions after 3 are refused with a
// message that says which versions this build speaks.
TEST(FrameHeader, RejectsOtherVersions) {
  EXPECT_EQ(decode_with(2, 0), header_errc::bad_version);
  EXPECT_EQ(decode_with(2, 1), header_errc::bad_version);
  EXPECT_EQ(decode_with(2, 4), header_errc::bad_version);
  EXPECT_EQ(to_string(header_errc::bad_version),
            "unsupported protocol version (this build speaks corvid protocol versions 2 and 3)");
  EXPECT_EQ(decode_with(2, '\xff'), header_errc::bad_version);
}

// Both versions decode alike, whatever their flags: the must-understand rule is the
// receiver's, on both.
TEST(FrameHeader, AcceptsVersions2And3) {
  EXPECT_EQ(decode_with(2, 2), header_errc::ok);
  EXPECT_EQ(decode_with(2, 3), header_errc::ok);
  std::string bytes = encoded({.flags = 0x01});
  bytes[2] = 2;  // a traced request of a sender from before version 3
  frame_header out;
  ASSERT_EQ(decode_header(bytes.data(), out, u32_max), header_errc::ok);
  EXPECT_EQ(out.flags, 0x01);
}

// Version 3 exactly when a must-understand bit (0x0F) is set: optional bits (0xF0) alone
// leave a frame readable by a version-2 peer.
TEST(FrameHeader, VersionByteFollowsTheMustUnderstandBits) {
  for (unsigned f = 0; f <= 0xff; ++f) {
    const std::string bytes = encoded({.flags = static_cast<std::uint8_t>(f)});
    EXPECT_EQ(bytes[2], (f & 0x0F) != 0 ? 3 : 2) << f;
  }
}

// Per kind: a request knows trace (0x01), compression (0x04) and metadata (0x08), a response
// compression and metadata, a stream item compression; every other bit 0-3, and every bit of
// another kind, is unknown. Bits 4-7 are never refused.
TEST(FrameHeader, UnknownMustUnderstandBitsByKind) {
  for (std::uint8_t t = 1; t <= max_msg_type; ++t) {
    const auto type = static_cast<msg_type>(t);
    const std::uint8_t known = type == msg_type::request       ? 0x0D
                               : type == msg_type::response    ? 0x0C
                               : type == msg_type::stream_item ? 0x04
                                                               : 0x00;
    EXPECT_EQ(known_must_understand(type), known);
    for (unsigned f = 0; f <= 0xff; ++f) {
      const frame_header h{.type = type, .flags = static_cast<std::uint8_t>(f)};
      EXPECT_EQ(unknown_must_understand(h), f & 0x0F & ~known) << int{t} << " " << f;
    }
  }
}

// The refusal names the lowest unknown bit, then the whole byte.
TEST(FrameHeader, DescribesTheLowestUnknownBit) {
  EXPECT_EQ(describe_unknown_must_understand({.type = msg_type::request, .flags = 0x03}),
            "unknown must-understand flag bit 0x02 (flags 0x03)");
  EXPECT_EQ(describe_unknown_must_understand({.type = msg_type::stream_item, .flags = 0xfc}),
            "unknown must-understand flag bit 0x08 (flags 0xfc)");
  EXPECT_EQ(describe_unknown_must_understand({.type = msg_type::response, .flags = 0x09}),
            "unknown must-understand flag bit 0x01 (flags 0x09)");
}

TEST(FrameHeader, RejectsUnknownTypes) {
  for (char t : {'\0', '\12', '\xff'}) EXPECT_EQ(decode_with(3, t), header_errc::bad_type);
  for (char t = 1; t <= 9; ++t) EXPECT_EQ(decode_with(3, t), header_errc::ok);  // ..stream_credit
}

// Checked in wire order, so a peer that is not corvid at all hears "bad magic", not a
// complaint about some later byte.
TEST(FrameHeader, ReportsTheFirstBadField) {
  std::string bytes = encoded({.body_length = u32_max});
  bytes[2] = 9;
  bytes[3] = 10;
  frame_header out;
  EXPECT_EQ(decode_header(bytes.data(), out, 0), header_errc::bad_version);
  bytes[1] = 'X';
  EXPECT_EQ(decode_header(bytes.data(), out, 0), header_errc::bad_magic);
  bytes = encoded({.body_length = u32_max});
  bytes[3] = 10;
  EXPECT_EQ(decode_header(bytes.data(), out, 0), header_errc::bad_type);
}

header_errc decode_lengths(std::uint32_t body, std::uint32_t attachment, std::uint32_t limit,
                           frame_header& out) {
  const std::string bytes =
      encoded({.request_id = 77, .body_length = body, .attachment_length = attachment});
  return decode_header(bytes.data(), out, limit);
}

TEST(FrameHeader, LimitAppliesToBodyPlusAttachment) {
  constexpr std::uint32_t limit = default_max_frame_size;
  frame_header out;
  EXPECT_EQ(decode_lengths(limit, 0, limit, out), header_errc::ok);
  EXPECT_EQ(decode_lengths(0, limit, limit, out), header_errc::ok);
  EXPECT_EQ(decode_lengths(limit - 10, 10, limit, out), header_errc::ok);
  EXPECT_EQ(decode_lengths(limit + 1, 0, limit, out), header_errc::too_large);
  EXPECT_EQ(decode_lengths(0, limit + 1, limit, out), header_errc::too_large);
  EXPECT_EQ(decode_lengths(limit - 10, 11, limit, out), header_errc::too_large);
  EXPECT_EQ(decode_lengths(0, 0, 0, out), header_errc::ok);
  EXPECT_EQ(decode_lengths(1, 0, 0, out), header_errc::too_large);
}

// The sum is taken in 64 bits: two 32-bit maxima must not wrap around to a small size.
TEST(FrameHeader, MaximumLengthsDoNotOverflow) {
  frame_header out;
  EXPECT_EQ(decode_lengths(u32_max, u32_max, default_max_frame_size, out), header_errc::too_large);
  EXPECT_EQ(out.payload_size(), 2 * std::size_t{u32_max});
  EXPECT_EQ(out.frame_size(), 32 + 2 * std::size_t{u32_max});
  EXPECT_EQ(decode_lengths(u32_max, u32_max, u32_max, out), header_errc::too_large);
  EXPECT_EQ(decode_lengths(u32_max, 1, u32_max, out), header_errc::too_large);
  EXPECT_EQ(decode_lengths(u32_max, 0, u32_max, out), header_errc::ok);
}

// The server's message_too_large reply names the request, so decode fills the header anyway.
TEST(FrameHeader, TooLargeStillReportsTheHeader) {
  frame_header out;
  ASSERT_EQ(decode_lengths(5, 6, 10, out), header_errc::too_large);
  EXPECT_EQ(out.request_id, 77u);
  EXPECT_EQ(out.body_length, 5u);
  EXPECT_EQ(out.attachment_length, 6u);
}

// The status byte is passed up as is; unassigned values are the receiver's to treat as errors.
TEST(FrameHeader, PassesUnknownStatusThrough) {
  frame_header out;
  ASSERT_EQ(decode_with(5, '\xc8'), header_errc::ok);
  ASSERT_EQ(decode_header(encoded({.status = static_cast<rpc_errc>(200)}).data(), out, 0),
            header_errc::ok);
  EXPECT_EQ(static_cast<int>(out.status), 200);
}

TEST(FrameHeader, ErrorNamesAreDistinct) {
  std::set<std::string_view> names;
  for (auto e : {header_errc::ok, header_errc::bad_magic, header_errc::bad_version,
                 header_errc::bad_type, header_errc::too_large}) {
    EXPECT_FALSE(to_string(e).empty());
    names.insert(to_string(e));
  }
  EXPECT_EQ(names.size(), 5u);
}

// The status byte is rpc_errc: values are the wire contract, they must never be renumbered.
TEST(StatusByte, ValuesAreFixed) {
  const std::pair<rpc_errc, int> table[] = {
      {rpc_errc::ok, 0},
      {rpc_errc::timeout, 1},
      {rpc_errc::connection_closed, 2},
      {rpc_errc::function_not_found, 3},
      {rpc_errc::bad_request, 4},
      {rpc_errc::server_busy, 5},
      {rpc_errc::message_too_large, 6},
      {rpc_errc::handler_error, 7},
      {rpc_errc::cancelled, 8},
      {rpc_errc::protocol_error, 9},
      {rpc_errc::connect_failed, 10},
      {rpc_errc::invalid_argument, 11},
      {rpc_errc::no_rdma_device, 12},
      {rpc_errc::client_busy, 13},
      {rpc_errc::signature_mismatch, 14},
      {rpc_errc::unauthenticated, 15},
      {rpc_errc::permission_denied, 16},
      {rpc_errc::resource_exhausted, 17},
      {rpc_errc::internal, 18},
  };
  static_assert(last_rpc_errc == rpc_errc::internal);
  for (auto [code, value] : table) {
    EXPECT_EQ(static_cast<int>(code), value) << to_string(code);
    EXPECT_NE(to_string(code), "unknown_error");
    EXPECT_EQ(encoded({.status = code})[5], static_cast<char>(value));
  }
  static_assert(sizeof(rpc_errc) == 1);
}

}  // namespace
}  // namespace corvid::protocol::test
