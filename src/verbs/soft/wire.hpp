#pragma once
// The byte stream between two connected softverbs queue pairs (one Unix stream socket per
// pair; both ends are on one host, so fields are in host byte order). Every frame starts with
// a frame_header; only hello and data carry a body.
//
//   hello  active -> passive, then passive -> active: who I am, whom I want, my psn/rnr_retry
//   data   one SEND: `length` payload bytes, seq = the sender's psn for it, imm if flagged
//   ack    every data frame up to and including `seq` is placed (cumulative)
//   nak    the data frame `seq` failed at the receiver; `arg` is a nak_kind. The sender's
//          queue pair errors; so did the receiver's.
#include <array>
#include <cstdint>

namespace corvid::verbs::soft::wire {

enum class frame_type : std::uint8_t { hello = 1, data = 2, ack = 3, nak = 4 };
enum class nak_kind : std::uint32_t { rnr_retry_exceeded = 1, invalid_request = 2, remote_op = 3 };

inline constexpr std::uint8_t flag_imm = 1;

struct frame_header {
  frame_type type;
  std::uint8_t flags;
  std::uint16_t reserved;
  std::uint32_t seq;
  std::uint32_t arg;     // data: immediate; nak: nak_kind
  std::uint32_t length;  // body bytes that follow
};
static_assert(sizeof(frame_header) == 16);

inline constexpr std::uint32_t hello_magic = 0x31565343;  // "CSV1"

struct hello {
  std::uint32_t magic;
  std::uint32_t src_qpn;
  std::uint32_t dst_qpn;
  std::uint32_t psn;  // the first data seq the sender will use
  std::array<std::uint8_t, 16> src_gid;
  std::array<std::uint8_t, 16> dst_gid;
  std::uint8_t rnr_retry;  // the sender's RNR retry count, enforced by the receiver
  std::uint8_t reserved[3];
};
static_assert(sizeof(hello) == 52);

}  // namespace corvid::verbs::soft::wire
