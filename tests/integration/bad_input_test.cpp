// Hostile or broken bytes at the server: each gets a clear error where the protocol allows,
// the bad connection closes, and every other client keeps being served.
#include <map>
#include <string>
#include <variant>

#include "test_support.hpp"

namespace corvid_test {
namespace {

using corvid::protocol::frame_header;
using corvid::protocol::header_size;

constexpr std::uint32_t add_id = corvid::protocol::function_id<add>();
constexpr std::uint32_t echo_id = corvid::protocol::function_id<echo>();

// A well-behaved client on its own connection still gets answers.
void expect_server_healthy(test_server& srv) {
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call<add>(20, 22);
  }());
  EXPECT_EQ(r.value_or(-1), 42);
}

void expect_connection_error(raw_connection& raw, corvid::rpc_errc code, std::uint64_t id) {
  auto f = raw.read_frame();
  ASSERT_TRUE(f.has_value()) << "no error frame before close";
  EXPECT_EQ(f->header.type, corvid::protocol::msg_type::response);
  EXPECT_EQ(f->header.status, code) << f->message();
  EXPECT_EQ(f->header.request_id, id);
  EXPECT_FALSE(f->message().empty());
  EXPECT_TRUE(raw.closed_by_peer());
}

TEST(bad_input, garbage_bytes) {
  test_server srv;
  raw_connection raw(srv.port());
  raw.send("GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: x\r\n\r\n");
  expect_connection_error(raw, corvid::rpc_errc::protocol_error, 0);
  expect_server_healthy(srv);
}

TEST(bad_input, wrong_magic) {
  test_server srv;
  raw_connection raw(srv.port());
  std::string frame = request_frame(1, add_id, 1, 2);
  frame[0] = 'X';
  raw.send(frame);
  expect_connection_error(raw, corvid::rpc_errc::protocol_error, 0);
  expect_server_healthy(srv);
}

TEST(bad_input, unknown_version) {
  test_server srv;
  raw_connection raw(srv.port());
  std::string frame = request_frame(1, add_id, 1, 2);
  frame[2] = 1;  // a version-1 peer: bodies and header offset 6 mean other things there
  raw.send(frame);
  expect_connection_error(raw, corvid::rpc_errc::protocol_error, 0);
  expect_server_healthy(srv);
}

TEST(bad_input, response_frame_sent_to_server) {
  test_server srv;
  raw_connection raw(srv.port());
  std::string frame = request_frame(1, add_id, 1, 2);
  frame[3] = static_cast<char>(corvid::protocol::msg_type::response);
  raw.send(frame);
  expect_connection_error(raw, corvid::rpc_errc::protocol_error, 0);
  expect_server_healthy(srv);
}

TEST(bad_input, declared_length_over_the_limit_is_refused_before_allocating) {
  auto cfg = test_server::make_config();
  cfg.max_frame_size = 1 << 20;
  test_server srv(cfg);
  const std::size_t rss_before = vm_rss();
  raw_connection raw(srv.port());
  std::string frame(header_size, '\0');
  frame_header h;
  h.request_id = 77;
  h.function_id = echo_id;
  h.body_length = 0xfffffff0u;  // ~4 GiB
  h.attachment_length = 0xfffffff0u;
  corvid::protocol::encode_header(h, frame.data());
  raw.send(frame);
  expect_connection_error(raw, corvid::rpc_errc::message_too_large, 77);
  EXPECT_LT(vm_rss(), rss_before + (64u << 20));  // nothing near 4 GiB was touched
  expect_server_healthy(srv);
}

TEST(bad_input, just_over_the_limit_and_exactly_at_it) {
  auto cfg = test_server::make_config();
  cfg.max_frame_size = 4096;
  test_server srv(cfg);
  {
    raw_connection raw(srv.port());
    raw.send(request_frame(5, echo_id, std::string(4096 - 2, 'a')));  // 2-byte varint + 4094
    auto f = raw.read_frame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->header.status, corvid::rpc_errc::ok);
  }
  raw_connection raw(srv.port());
  raw.send(request_frame(6, echo_id, std::string(4096 - 1, 'a')));  // 4097 bytes
  expect_connection_error(raw, corvid::rpc_errc::message_too_large, 6);
}

TEST(bad_input, truncated_frame_then_eof) {
  test_server srv;
  raw_connection raw(srv.port());
  std::string frame = request_frame(3, echo_id, std::string(100, 'z'));
  raw.send(std::string_view(frame).substr(0, frame.size() - 10));
  raw.shutdown_send();
  EXPECT_TRUE(raw.closed_by_peer());
  expect_server_healthy(srv);
}

TEST(bad_input, arguments_that_do_not_decode) {
  test_server srv;
  raw_connection raw(srv.port());
  raw.send(request_frame(9, add_id, std::uint8_t{1}));  // add wants two ints, gets one byte
  auto f = raw.read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->header.request_id, 9u);
  EXPECT_EQ(f->header.status, corvid::rpc_errc::bad_request);
  EXPECT_NE(f->message().find("add"), std::string::npos) << f->message();
  // Framing is intact, so the connection stays usable: its other calls are not lost.
  raw.send(request_frame(10, add_id, 2, 3));
  auto g = raw.read_frame();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->header.request_id, 10u);
  int sum = 0;
  EXPECT_EQ(corvid::codec::decode(g->body, sum), corvid::codec::decode_errc::ok);
  EXPECT_EQ(sum, 5);
  // Trailing bytes after valid arguments are rejected too.
  raw.send(request_frame(11, add_id, 2, 3, std::uint8_t{0}));
  auto t = raw.read_frame();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->header.status, corvid::rpc_errc::bad_request);
}

TEST(bad_input, unknown_function_id) {
  test_server srv;
  raw_connection raw(srv.port());
  raw.send(request_frame(4, 0xdeadbeef, 1));
  auto f = raw.read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->header.status, corvid::rpc_errc::function_not_found);
  EXPECT_NE(f->message().find("0xdeadbeef"), std::string::npos) << f->message();
}

// The trace flag promises a trace context at the body's start: a body too short for one is
// refused (the connection stays), and an all-zero context (invalid for W3C) is dropped while
// its call runs untraced. Either way the arguments after it are read as usual.
TEST(bad_input, trace_flag_with_a_body_too_short_or_an_invalid_context) {
  test_server srv;
  raw_connection raw(srv.port());
  corvid::protocol::frame_header h;
  h.type = corvid::protocol::msg_type::request;
  h.flags = corvid::protocol::flag_trace;
  h.request_id = 1;
  h.function_id = add_id;
  raw.send(frame_bytes(h, std::string(24, '\x01')));
  auto f = raw.read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->header.status, corvid::rpc_errc::bad_request);
  EXPECT_NE(f->message().find("trace"), std::string::npos) << f->message();

  std::string body(25, '\0');  // trace id and span id all zeros
  corvid::codec::string_sink sink{body};
  corvid::codec::encode(sink, 40);
  corvid::codec::encode(sink, 2);
  h.request_id = 2;
  raw.send(frame_bytes(h, body));
  f = raw.read_frame();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->header.status, corvid::rpc_errc::ok) << f->message();
  int sum = 0;
  ASSERT_EQ(corvid::codec::decode(f->body, sum), corvid::codec::decode_errc::ok);
  EXPECT_EQ(sum, 42);
  expect_server_healthy(srv);
}

TEST(bad_input, many_frames_in_one_send_are_all_answered) {
  test_server srv;
  raw_connection raw(srv.port());
  std::string batch;
  for (int i = 1; i <= 100; ++i) batch += request_frame(i, add_id, i, 1);
  raw.send(batch);
  for (int i = 1; i <= 100; ++i) {
    auto f = raw.read_frame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->header.request_id, static_cast<std::uint64_t>(i));
  }
}

TEST(bad_input, silent_connection_does_not_block_others_or_stop) {
  test_server srv;
  raw_connection silent(srv.port());
  expect_server_healthy(srv);
  const auto begin = std::chrono::steady_clock::now();
  srv.server().stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 2s);  // not the 5 s stop_timeout
  EXPECT_TRUE(silent.closed_by_peer());
}

// A function only the client side names: the call below never reaches a server.
int size_of(std::variant<int, std::map<int, int>> v) { return static_cast<int>(v.index()); }

TEST(bad_input, an_argument_the_codec_refuses_fails_the_call_with_what_was_wrong) {
  // A valueless variant has no alternative to encode: the call ends with that reason, not
  // with "out of memory", and the connection goes on serving.
  struct boom {
    operator std::map<int, int>() const { throw std::runtime_error("no map today"); }
  };
  std::variant<int, std::map<int, int>> v;
  EXPECT_THROW(v.emplace<1>(boom{}), std::runtime_error);
  ASSERT_TRUE(v.valueless_by_exception());
  test_server srv;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call<size_of>(v);
  }());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::invalid_argument) << r.error().message();
  EXPECT_NE(r.error().message().find("cannot be encoded"), std::string::npos)
      << r.error().message();
  auto ok = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call<add>(20, 22);
  }());
  EXPECT_EQ(ok.value_or(-1), 42);
}

}  // namespace
}  // namespace corvid_test
