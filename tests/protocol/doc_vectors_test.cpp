// Every hex vector in docs/protocol.md, rebuilt here from encode_header + codec::encode and
// compared byte for byte. The doc is read at test time, so editing either side alone fails.
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "corvid/call_metadata.hpp"
#include "corvid/trace/trace_context.hpp"

#include "protocol/metadata_block.hpp"
#include "wire_util.hpp"

namespace corvid::protocol::test {
namespace {

std::string not_found_message(std::uint32_t id) {
  char msg[64];
  std::snprintf(msg, sizeof msg, "no handler registered for function id 0x%08x", id);
  return msg;
}

// echo("hello") carrying the W3C specification's example trace context.
std::string traced_echo_request(std::uint64_t id) {
  const auto trace =
      *trace_context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  std::string prefix(25, '\0');
  std::memcpy(prefix.data(), trace.trace_id.data(), 16);
  std::memcpy(prefix.data() + 16, trace.span_id.data(), 8);
  prefix[24] = static_cast<char>(trace.flags);
  std::string out = request<echo>(id, {}, "hello");
  frame_header h;
  decode_header(out.data(), h, default_max_frame_size);
  h.flags = flag_trace;
  h.body_length += 25;
  encode_header(h, out.data());
  out.insert(header_size, prefix);
  return out;
}

// `frame` with its flags byte set to `flags` by encode_header (which then picks the version).
std::string with_flags(std::string frame, std::uint8_t flags) {
  frame_header h;
  decode_header(frame.data(), h, default_max_frame_size);
  h.flags = flags;
  encode_header(h, frame.data());
  return frame;
}

// `frame` (a request or response) carrying `md`: its block first in the body, flag_metadata set
// (encode_header then picks version 3).
std::string with_metadata(std::string frame, const metadata& md) {
  frame_header h;
  decode_header(frame.data(), h, default_max_frame_size);
  std::string block(metadata_wire_size(md), '\0');
  encode_metadata(md, block.data());
  h.flags |= flag_metadata;
  h.body_length += static_cast<std::uint32_t>(block.size());
  encode_header(h, frame.data());
  frame.insert(header_size, block);
  return frame;
}

// name -> bytes, for every vector the doc must contain.
std::map<std::string, std::string> built_vectors() {
  const std::uint64_t id = first_id;
  std::string too_large(header_size, '\0');
  encode_header({.request_id = id + 6,
                 .function_id = function_id<echo>(),
                 .body_length = default_max_frame_size + 1},
                too_large.data());
  return {
      {"echo_request", request<echo>(id, {}, "hello")},
      {"echo_response", response(id, std::string("hello"))},
      {"store_request", request<store>(id + 1, "\xde\xad\xbe\xef", "k1")},
      {"store_response", response(id + 1)},
      {"add_request", request<&ns::calc::add>(id + 2, {}, 1, 2)},
      {"add_response", response(id + 2, 3)},
      {"not_found_response", error_response(id + 3, rpc_errc::function_not_found,
                                            not_found_message(function_id<&ns::calc::mod>()))},
      {"handler_error_response",
       error_response(id + 4, rpc_errc::handler_error, "division by zero")},
      {"bad_request_response",
       error_response(id + 5, rpc_errc::bad_request,
                      "arguments do not match the parameters of echo (truncated)")},
      {"too_large_request", too_large},
      {"too_large_response",
       error_response(id + 6, rpc_errc::message_too_large,
                      "frame of 67108865 bytes exceeds the server limit of 67108864")},
      {"protocol_error_response",
       error_response(0, rpc_errc::protocol_error, "bad magic (not a corvid stream)")},
      {"stream_item_frame",
       frame({.type = msg_type::stream_item, .request_id = id + 7}, {}, std::string("re: a"))},
      {"stream_credit_frame",
       frame({.type = msg_type::stream_credit, .request_id = id + 7, .credit = 65536}, {})},
      {"stream_end_frame", frame({.type = msg_type::stream_end, .request_id = id + 7}, {})},
      {"traced_echo_request", traced_echo_request(id + 8)},
      {"traced_echo_response", response(id + 8, std::string("hello"))},
      {"unknown_flag_request", with_flags(request<echo>(id + 9, {}, "hello"), 0x12)},
      {"unknown_flag_response",
       error_response(id + 9, rpc_errc::bad_request,
                      "unknown must-understand flag bit 0x02 (flags 0x12)")},
      {"metadata_echo_request",
       with_metadata(request<echo>(id + 16, {}, "hello"), metadata{{"tenant", "acme"}})},
      {"metadata_echo_response",
       with_metadata(response(id + 16, std::string("hello")), metadata{{"served-by", "a1"}})},
      {"ping_frame", frame({.type = msg_type::ping}, {})},
      {"pong_frame", frame({.type = msg_type::pong, .reactors = 2}, {})},
  };
}

TEST(DocVectors, DocHasExactlyTheTestedVectors) {
  const auto doc = doc_vectors();
  const auto built = built_vectors();
  for (const auto& [name, bytes] : built) EXPECT_TRUE(doc.contains(name)) << name;
  for (const auto& [name, bytes] : doc) EXPECT_TRUE(built.contains(name)) << "untested: " << name;
}

TEST(DocVectors, EveryVectorMatchesTheEncoder) {
  const auto doc = doc_vectors();
  for (const auto& [name, bytes] : built_vectors()) {
    auto it = doc.find(name);
    if (it == doc.end()) continue;  // reported above
    EXPECT_EQ(hex(it->second), hex(bytes)) << name;
  }
}

// Each doc frame parses as one whole frame: its header's lengths account for every byte.
TEST(DocVectors, EveryVectorIsOneFrame) {
  for (const auto& [name, bytes] : doc_vectors()) {
    ASSERT_GE(bytes.size(), header_size) << name;
    frame_header h;
    const auto ec = decode_header(bytes.data(), h, default_max_frame_size);
    if (name == "too_large_request") {
      EXPECT_EQ(ec, header_errc::too_large);
      EXPECT_EQ(bytes.size(), header_size);
    } else {
      EXPECT_EQ(ec, header_errc::ok) << name;
      EXPECT_EQ(h.frame_size(), bytes.size()) << name;
      if (name.starts_with("ping_") || name.starts_with("pong_")) {
        EXPECT_EQ(h.type, name.starts_with("ping_") ? msg_type::ping : msg_type::pong);
      } else if (!name.starts_with("stream_")) {
        EXPECT_EQ(h.type, name.ends_with("_request") ? msg_type::request : msg_type::response);
      }
    }
  }
}

// Spot checks with the bytes written out here too, so a wrong doc reader cannot hide a change.
TEST(DocVectors, SpotChecksAgainstLiterals) {
  EXPECT_EQ(hex(request<echo>(first_id, {}, "hello")),
            hex(unhex("43560201 0000f0c3 0000000001000000 84d49dd4 06000000 00000000 00000000"
                      "0568656c6c6f")));
  EXPECT_EQ(hex(request<&ns::calc::add>(first_id + 2, {}, 1, 2)),
            hex(unhex("43560201 00006ff7 0200000001000000 ca91c98a 08000000 00000000 00000000"
                      "01000000 02000000")));
  EXPECT_EQ(hex(request<store>(first_id + 1, "\xde\xad\xbe\xef", "k1")),
            hex(unhex("43560201 0000b019 0100000001000000 2ebce7c7 03000000 04000000 00000000"
                      "026b31 deadbeef")));
}

// The decoded side: the doc's request bodies are what the server decodes into arguments.
TEST(DocVectors, RequestBodiesDecodeAsArguments) {
  const auto doc = doc_vectors();
  const std::string& add = doc.at("add_request");
  std::tuple<int, int> args;
  ASSERT_EQ(codec::decode(std::string_view(add).substr(header_size), args), codec::decode_errc::ok);
  EXPECT_EQ(args, std::make_tuple(1, 2));
  const std::string& msg = doc.at("not_found_response");
  std::string text;
  ASSERT_EQ(codec::decode(std::string_view(msg).substr(header_size), text), codec::decode_errc::ok);
  EXPECT_EQ(text, "no handler registered for function id 0x71574c1d");
}

}  // namespace
}  // namespace corvid::protocol::test
