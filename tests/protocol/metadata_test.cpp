// Call metadata on the wire (docs/protocol.md, "Call metadata"): raw frames against a live
// rpc_server. A request's block reaches request_context::metadata() without a copy; a block
// that is malformed or over the server's limits refuses that request alone, before its
// handler runs; a handler's response_metadata() comes back as a block in front of the reply.
#include <atomic>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "corvid/corvid.hpp"

#include "protocol/metadata_block.hpp"
#include "raw_peer.hpp"
#include "wire_util.hpp"

namespace {

std::atomic<int> md_runs{0};
// Answers with the request's metadata as "k=v;" pairs, and sends each entry back with the
// key prefixed "echo-".
std::string md_echo(corvid::request_context& ctx, std::string s) {
  ++md_runs;
  std::string seen;
  for (corvid::metadata_entry e : ctx.metadata()) {
    seen += std::string(e.key) + "=" + std::string(e.value) + ";";
    ctx.response_metadata().add("echo-" + std::string(e.key), e.value);
  }
  return s + "|" + seen;
}

}  // namespace

namespace corvid::protocol::test {
namespace {

using namespace std::string_literals;

std::string u32(std::uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}
std::string u16(std::uint16_t v) {
  std::string s(2, '\0');
  std::memcpy(s.data(), &v, 2);
  return s;
}
std::string entry(std::string_view k, std::string_view v) {
  return std::string(1, static_cast<char>(k.size())) + std::string(k) +
         u32(static_cast<std::uint32_t>(v.size())) + std::string(v);
}
// A block with `count` in its head over `entries` (a test may make them disagree).
std::string block(std::uint16_t count, const std::string& entries) {
  return u32(static_cast<std::uint32_t>(entries.size())) + u16(count) + entries;
}
// A request to F with `md` in front of its arguments and the metadata flag.
template <auto F>
std::string with_metadata(std::uint64_t id, const std::string& md, std::string arg) {
  std::string f = request<F>(id, {}, std::move(arg));
  frame_header h;
  decode_header(f.data(), h, UINT32_MAX);
  h.body_length += static_cast<std::uint32_t>(md.size());
  h.flags |= flag_metadata;
  encode_header(h, f.data());
  f.insert(header_size, md);
  return f;
}

class ServerMetadata : public raw_server_test {
 protected:
  void SetUp() override {
    md_runs = 0;
    server_.register_handler<md_echo, echo>();
    start();
  }
  void expect_refused(std::uint64_t id, rpc_errc code, std::string_view why) {
    const std::string reply = peer_.read_frame();
    frame_header h;
    ASSERT_EQ(decode_header(reply.data(), h, UINT32_MAX), header_errc::ok);
    EXPECT_EQ(h.request_id, id);
    EXPECT_EQ(h.status, code) << reply.substr(header_size);
    EXPECT_NE(reply.find(why), std::string::npos) << reply.substr(header_size);
    EXPECT_EQ(md_runs, 0);
    // The connection goes on.
    peer_.send(request<echo>(id + 1, {}, "next"));
    EXPECT_EQ(hex(peer_.read_frame()), hex(response(id + 1, std::string("next"))));
  }
};

TEST_F(ServerMetadata, EntriesReachTheHandlerInOrderAndComeBackAsReplyMetadata) {
  peer_.send(with_metadata<md_echo>(
      7, block(3, entry("tenant", "acme") + entry("x-id", "") + entry("tenant", "b\0c"s)), "hi"));
  const std::string reply = peer_.read_frame();
  frame_header h;
  ASSERT_EQ(decode_header(reply.data(), h, UINT32_MAX), header_errc::ok);
  EXPECT_EQ(h.status, rpc_errc::ok);
  EXPECT_EQ(h.flags, flag_metadata);
  EXPECT_EQ(static_cast<std::uint8_t>(reply[2]), current_version);  // must-understand: v3
  const std::string body = reply.substr(header_size, h.body_length);
  metadata_read md = read_metadata(body, default_metadata_limits);
  ASSERT_EQ(md.code, rpc_errc::ok) << md.message;
  ASSERT_EQ(md.entries.size(), 3u);
  EXPECT_EQ(
      md.entries.to_metadata(),
      (corvid::metadata{{"echo-tenant", "acme"}, {"echo-x-id", ""}, {"echo-tenant", "b\0c"s}}));
  // The value after the block: the handler saw every entry, in order.
  std::string value;
  ASSERT_EQ(codec::decode(std::string_view(body).substr(md.consumed), value),
            codec::decode_errc::ok);
  EXPECT_EQ(value, "hi|tenant=acme;x-id=;tenant="s + "b\0c"s + ";");
}

TEST_F(ServerMetadata, AReplyWithoutMetadataIsSentAsBefore) {
  peer_.send(with_metadata<echo>(3, block(1, entry("tenant", "acme")), "plain"));
  EXPECT_EQ(hex(peer_.read_frame()), hex(response(3, std::string("plain"))));
}

TEST_F(ServerMetadata, TheTraceContextComesFirst) {
  const std::string trace = unhex(
      "4bf92f3577b34da6a3ce929d0e0e4736"
      "00f067aa0ba902b7"
      "01");
  std::string f = with_metadata<md_echo>(5, block(1, entry("k", "v")), "t");
  frame_header h;
  decode_header(f.data(), h, UINT32_MAX);
  h.body_length += 25;
  h.flags |= flag_trace;
  encode_header(h, f.data());
  f.insert(header_size, trace);
  peer_.send(f);
  const std::string reply = peer_.read_frame();
  EXPECT_NE(reply.find("t|k=v;"), std::string::npos) << hex(reply);
}

TEST_F(ServerMetadata, MoreEntriesThanTheLimitAreRefusedFromTheHeadAlone) {
  // The head claims 65 entries over bytes that are not even there.
  std::string f = with_metadata<md_echo>(11, u32(10) + u16(65), "x");
  peer_.send(f);
  expect_refused(11, rpc_errc::resource_exhausted, "65 entries exceeds the limit of 64");
}

TEST_F(ServerMetadata, MoreBytesThanTheLimitAreRefusedBeforeAnyEntryIsRead) {
  std::string entries = entry("big", std::string(9000, 'v'));
  peer_.send(with_metadata<md_echo>(13, block(1, entries), "x"));
  expect_refused(13, rpc_errc::resource_exhausted, "exceeds the limit of 8192");
}

TEST_F(ServerMetadata, ABlockLongerThanTheBodyIsABadRequest) {
  // The head says 1000 bytes of entries; the body has far fewer.
  peer_.send(with_metadata<md_echo>(15, u32(1000) + u16(1) + entry("k", "v"), "x"));
  expect_refused(15, rpc_errc::bad_request, "the metadata block says 1000 bytes");
}

TEST_F(ServerMetadata, ACountThatLiesEitherWayIsABadRequest) {
  peer_.send(with_metadata<md_echo>(17, block(2, entry("k", "v")), "x"));  // says 2, has 1
  expect_refused(17, rpc_errc::bad_request, "cut off");
  peer_.send(with_metadata<md_echo>(19, block(1, entry("a", "1") + entry("b", "2")), "x"));
  expect_refused(19, rpc_errc::bad_request, "do not fill");
}

TEST_F(ServerMetadata, AKeyThatIsNotALowercaseTokenIsABadRequest) {
  peer_.send(with_metadata<md_echo>(21, block(1, entry("Tenant", "x")), "x"));
  expect_refused(21, rpc_errc::bad_request, "its key is not");
  peer_.send(with_metadata<md_echo>(23, block(1, entry("", "x")), "x"));
  expect_refused(23, rpc_errc::bad_request, "its key is not");
}

TEST_F(ServerMetadata, AValueLengthPastTheBlockIsABadRequest) {
  std::string e = entry("k", "v");
  e.replace(2, 4, u32(0xFFFFFFF0u));  // the value length lies
  peer_.send(with_metadata<md_echo>(25, block(1, e), "x"));
  expect_refused(25, rpc_errc::bad_request, "cut off");
}

TEST_F(ServerMetadata, TheLimitsAreTheServersToSet) {
  server_config cfg = one_reactor();
  cfg.max_metadata_entries = 1;
  rpc_server small(cfg);
  small.register_handler<md_echo>();
  ASSERT_FALSE(small.async_start());
  raw_peer p;
  p.connect(small.port());
  p.send(with_metadata<md_echo>(31, block(2, entry("a", "1") + entry("b", "2")), "x"));
  const std::string reply = p.read_frame();
  frame_header h;
  decode_header(reply.data(), h, UINT32_MAX);
  EXPECT_EQ(h.status, rpc_errc::resource_exhausted);
  small.stop();
}

// The block's own rules, without a server.
TEST(MetadataBlock, EncodesWhatItReads) {
  corvid::metadata md{{"authorization", "Bearer abc"}, {"tenant", "7"}};
  std::string wire(metadata_wire_size(md), '\0');
  encode_metadata(md, wire.data());
  EXPECT_EQ(wire.size(), md.wire_size());
  const std::string body = wire + "rest";  // the arguments after the block
  metadata_read r = read_metadata(body, default_metadata_limits);
  ASSERT_EQ(r.code, rpc_errc::ok) << r.message;
  EXPECT_EQ(r.consumed, wire.size());
  EXPECT_EQ(r.entries.to_metadata(), md);
  EXPECT_EQ(r.entries.find("tenant"), "7");
  EXPECT_EQ(r.entries.find("missing"), std::nullopt);
}

TEST(MetadataBlock, KeysAreLowercaseTokens) {
  EXPECT_TRUE(corvid::is_metadata_key("x-request-id.v2_a"));
  EXPECT_FALSE(corvid::is_metadata_key(""));
  EXPECT_FALSE(corvid::is_metadata_key("Upper"));
  EXPECT_FALSE(corvid::is_metadata_key("sp ace"));
  EXPECT_FALSE(corvid::is_metadata_key(std::string(256, 'a')));
  EXPECT_TRUE(corvid::is_metadata_key(std::string(255, 'a')));
  corvid::metadata md;
  EXPECT_THROW(md.add("Bad", "x"), std::invalid_argument);
  EXPECT_TRUE(md.empty());
}

}  // namespace
}  // namespace corvid::protocol::test
