// Fuzzes corvid::protocol::decode_header, the first code to touch every byte a peer sends.
// It checks the decoder against an independent reading of docs/protocol.md ("Frame header"):
// the error is the first failed check in wire order, the size limit is compared in 64 bits
// (two 0xffffffff lengths must not wrap), the request id is filled in even for too_large
// (the server's reply names it), and an accepted header re-encodes to the same 32 bytes
// (offset 6 is the signature fingerprint, offset 28 the request's timeout).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "corvid/protocol/frame_header.hpp"

namespace {

using namespace corvid::protocol;

std::uint64_t le(const std::uint8_t* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

void check(bool ok) {
  if (!ok) std::abort();  // libFuzzer records the input and the stack
}

// The result the protocol document prescribes for these 32 bytes under `max_payload`.
header_errc expected_result(const std::uint8_t* in, std::uint32_t max_payload) {
  if (in[0] != 'C' || in[1] != 'V') return header_errc::bad_magic;
  if (in[2] != 2 && in[2] != 3) return header_errc::bad_version;
  if (in[3] < 1 || in[3] > 9) return header_errc::bad_type;  // request..stream_credit
  if (le(in + 20, 4) + le(in + 24, 4) > max_payload) return header_errc::too_large;
  return header_errc::ok;
}

void check_one(const std::uint8_t* in, std::uint32_t max_payload) {
  frame_header h;
  const header_errc got = decode_header(reinterpret_cast<const char*>(in), h, max_payload);
  check(got == expected_result(in, max_payload));
  if (got != header_errc::ok && got != header_errc::too_large) return;

  check(static_cast<std::uint8_t>(h.type) == in[3]);
  check(h.flags == in[4]);
  check(static_cast<std::uint8_t>(h.status) == in[5]);
  check(h.signature == le(in + 6, 2));
  check(h.request_id == le(in + 8, 8));
  // Offsets 16 and 28 by frame kind (docs/protocol.md, "Header fields by frame kind").
  const bool pong = h.type == msg_type::pong;
  const bool credit = h.type == msg_type::stream_credit;
  check((pong ? h.reactors : h.function_id) == le(in + 16, 4));
  check((pong ? h.function_id : h.reactors) == 0);
  check(h.body_length == le(in + 20, 4));
  check(h.attachment_length == le(in + 24, 4));
  check((credit ? h.credit : h.timeout_ms) == le(in + 28, 4));
  check((credit ? h.timeout_ms : h.credit) == 0);
  check(h.payload_size() == le(in + 20, 4) + le(in + 24, 4));  // no 32-bit wrap
  check(h.frame_size() == header_size + h.payload_size());
  if (got == header_errc::too_large) {
    check(h.payload_size() > max_payload);
    return;
  }
  check(h.payload_size() <= max_payload);

  // Round trip: the same bytes, but the version, which the encoder picks from the flags: 3
  // with a must-understand bit (0x0F), else 2 (both are read alike).
  char out[header_size];
  std::memset(out, 0x5a, sizeof out);
  encode_header(h, out);
  const std::uint8_t version = (in[4] & 0x0F) != 0 ? 3 : 2;
  for (std::size_t i = 0; i < header_size; ++i)
    check(static_cast<std::uint8_t>(out[i]) == (i == 2 ? version : in[i]));
  frame_header again;
  check(decode_header(out, again, max_payload) == header_errc::ok);
  check(again.type == h.type && again.flags == h.flags && again.status == h.status &&
        again.signature == h.signature && again.request_id == h.request_id &&
        again.function_id == h.function_id && again.body_length == h.body_length &&
        again.attachment_length == h.attachment_length && again.timeout_ms == h.timeout_ms &&
        again.credit == h.credit && again.reactors == h.reactors);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < header_size) return -1;  // -1: not added to the corpus
  // The 32 header bytes are copied to an exactly-sized heap block so ASan catches a read past
  // them; bytes 32..35, when present, pick one more limit, so the fuzzer can steer it to the
  // boundary of the lengths it chose.
  auto* in = static_cast<std::uint8_t*>(std::malloc(header_size));
  std::memcpy(in, data, header_size);
  const std::uint32_t limits[] = {0,           1,           4096,       default_max_frame_size,
                                  0x7fffffffu, 0xfffffffeu, 0xffffffffu};
  for (std::uint32_t max : limits) check_one(in, max);
  if (size >= header_size + 4) check_one(in, static_cast<std::uint32_t>(le(data + 32, 4)));
  std::free(in);
  return 0;
}
