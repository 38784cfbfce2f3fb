// The named frame builders (src/protocol/frames.hpp): each kind sets its own fields, and a
// pong's reactor count and a credit's grant travel at their documented offsets and come back
// in their own fields, never in a request's.
#include "protocol/frames.hpp"

#include <array>

#include <gtest/gtest.h>

namespace corvid::protocol {
namespace {

frame_header round_trip(const frame_header& h, std::array<char, header_size>& wire) {
  encode_header(h, wire.data());
  frame_header back;
  EXPECT_EQ(decode_header(wire.data(), back, UINT32_MAX), header_errc::ok);
  return back;
}

std::uint32_t u32_at(const std::array<char, header_size>& wire, std::size_t offset) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(wire[offset + i])) << (8 * i);
  return v;
}

TEST(frames, a_credit_grant_travels_at_offset_28_in_its_own_field) {
  std::array<char, header_size> wire{};
  const frame_header back = round_trip(make_credit(9, 65536), wire);
  EXPECT_EQ(u32_at(wire, 28), 65536u);
  EXPECT_EQ(back.type, msg_type::stream_credit);
  EXPECT_EQ(back.request_id, 9u);
  EXPECT_EQ(back.credit, 65536u);
  EXPECT_EQ(back.timeout_ms, 0u);
}

TEST(frames, a_pong_states_the_reactor_count_at_offset_16_in_its_own_field) {
  std::array<char, header_size> wire{};
  const frame_header back = round_trip(make_pong(3, 8), wire);
  EXPECT_EQ(u32_at(wire, 16), 8u);
  EXPECT_EQ(back.reactors, 8u);
  EXPECT_EQ(back.function_id, 0u);
}

TEST(frames, a_request_keeps_its_function_id_and_timeout) {
  std::array<char, header_size> wire{};
  const frame_header back = round_trip(
      make_request({.id = 5, .function_id = 0xd49dd484, .body = 10, .timeout_ms = 250}), wire);
  EXPECT_EQ(back.function_id, 0xd49dd484u);
  EXPECT_EQ(back.timeout_ms, 250u);
  EXPECT_EQ(back.credit, 0u);
  EXPECT_EQ(back.reactors, 0u);
}

TEST(frames, fields_of_another_kind_are_not_sent) {
  // A credit field set on a request is not on the wire: a field means one thing per kind.
  frame_header h = make_request({.id = 1, .function_id = 7, .timeout_ms = 100});
  h.credit = 999;
  h.reactors = 999;
  std::array<char, header_size> wire{};
  const frame_header back = round_trip(h, wire);
  EXPECT_EQ(u32_at(wire, 16), 7u);
  EXPECT_EQ(u32_at(wire, 28), 100u);
  EXPECT_EQ(back.credit, 0u);
  EXPECT_EQ(back.reactors, 0u);
}

TEST(frames, error_and_item_builders) {
  const frame_header e = make_error(4, rpc_errc::server_busy, 12);
  EXPECT_EQ(e.type, msg_type::response);
  EXPECT_EQ(e.status, rpc_errc::server_busy);
  EXPECT_EQ(e.body_length, 12u);
  const frame_header i = make_item(6, 100);
  EXPECT_EQ(i.type, msg_type::stream_item);
  EXPECT_EQ(i.body_length, 100u);
  EXPECT_EQ(make_stream_end(6).type, msg_type::stream_end);
  EXPECT_EQ(make_cancel(2).type, msg_type::cancel);
  EXPECT_EQ(make_ping(0).type, msg_type::ping);
}

TEST(frames, an_rdma_setup_frame_carries_request_id_1_and_its_status) {
  std::array<char, header_size> wire{};
  const frame_header back = round_trip(make_rdma_setup(80, rpc_errc::server_busy), wire);
  EXPECT_EQ(back.type, msg_type::rdma_setup);
  EXPECT_EQ(back.request_id, 1u);
  EXPECT_EQ(back.status, rpc_errc::server_busy);
  EXPECT_EQ(back.body_length, 80u);
  EXPECT_EQ(back.attachment_length, 0u);
  EXPECT_EQ(back.function_id, 0u);
}

}  // namespace
}  // namespace corvid::protocol
