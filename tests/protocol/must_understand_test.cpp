// The must-understand flag bits (docs/protocol.md, "Flags"): bits 0-3 a receiver must know
// for the frame's kind or refuse the frame, bits 4-7 it may ignore; a frame that sets one of
// bits 0-3 travels as version 3. Raw frames against a live rpc_server, and a fake server
// against rpc_client.
#include <atomic>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "corvid/corvid.hpp"

#include "../support/stream_handlers.hpp"
#include "raw_peer.hpp"
#include "wire_util.hpp"

namespace {

std::atomic<int> counted_runs{0};
// Counts its runs: a refused request must not reach its handler.
std::string counted(std::string s) {
  ++counted_runs;
  return s;
}
// What the handler saw of the caller's trace context.
std::string trace_seen(corvid::request_context& ctx, std::string s) {
  if (ctx.trace() == nullptr) return s + " untraced";
  return s + " " +
         corvid::test::hex(std::string(ctx.trace()->trace_id.begin(), ctx.trace()->trace_id.end()));
}

}  // namespace

namespace corvid::protocol::test {
namespace {

using namespace std::chrono_literals;

// `frame` with its flags byte set to `flags` and its version byte to `version`: crafted, so
// a test can send what a corvid sender never would (an unknown bit, trace as version 2).
std::string crafted(std::string frame, std::uint8_t flags, std::uint8_t version) {
  frame[2] = static_cast<char>(version);
  frame[4] = static_cast<char>(flags);
  return frame;
}

// The W3C example context, as a trace prefix: 25 bytes before the arguments.
const std::string w3c_trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
std::string trace_prefix() { return unhex(w3c_trace_id + "00f067aa0ba902b7" + "01"); }
// A request to F whose body starts with the trace prefix, flags `flags`, version `version`.
template <auto F>
std::string traced_request(std::uint64_t id, std::uint8_t flags, std::uint8_t version,
                           std::string arg) {
  std::string f = request<F>(id, {}, std::move(arg));
  frame_header h;
  decode_header(f.data(), h, UINT32_MAX);
  h.body_length += 25;
  encode_header(h, f.data());
  f.insert(header_size, trace_prefix());
  return crafted(std::move(f), flags, version);
}

std::string refusal(std::uint64_t id, const std::string& message) {
  return error_response(id, rpc_errc::bad_request, message);
}

class ServerMustUnderstand : public raw_server_test {
 protected:
  void SetUp() override {
    counted_runs = 0;
    server_.register_handler<counted, trace_seen, echo>();
    server_.register_handler<corvid_test::streams::upload>();
    start();
  }
  // The connection still serves calls: a plain request gets its reply.
  void expect_still_serving(std::uint64_t id) {
    peer_.send(request<echo>(id, {}, "next"));
    EXPECT_EQ(hex(peer_.read_frame()), hex(response(id, std::string("next"))));
  }
};

// Each unknown must-understand bit of a request: refused with bad_request and the exact
// message before its body is read or its handler runs; the connection goes on.
TEST_F(ServerMustUnderstand, UnknownBitOnARequestIsRefusedAndTheConnectionStays) {
  std::uint64_t id = first_id;
  // 0x04 is compression (tests/server/compression_e2e_test.cpp), 0x08 metadata (metadata_test.cpp).
  for (std::uint8_t bit : {0x02}) {
    char want[64];
    std::snprintf(want, sizeof want, "unknown must-understand flag bit 0x%02x (flags 0x%02x)", bit,
                  bit);
    for (std::uint8_t version : {3, 2}) {  // the rule holds for both versions
      peer_.send(crafted(request<counted>(++id, {}, "x"), bit, version));
      EXPECT_EQ(hex(peer_.read_frame()), hex(refusal(id, want)))
          << int{bit} << " v" << int{version};
    }
  }
  EXPECT_EQ(counted_runs, 0) << "a refused request's handler ran";
  expect_still_serving(++id);
  peer_.send(request<counted>(++id, {}, "y"));
  EXPECT_EQ(hex(peer_.read_frame()), hex(response(id, std::string("y"))));
  EXPECT_EQ(counted_runs, 1);
}

// The refusal comes before anything reads the body: not the trace check's complaint about a
// short body, not the arguments' "do not match", whatever the body holds.
TEST_F(ServerMustUnderstand, RefusedBeforeTheBodyIsRead) {
  peer_.send(crafted(request<counted>(first_id, {}, "x"), 0x03, 3));  // trace + unknown, 2 bytes
  EXPECT_EQ(hex(peer_.read_frame()),
            hex(refusal(first_id, "unknown must-understand flag bit 0x02 (flags 0x03)")));
  peer_.send(crafted(frame({.type = msg_type::request,
                            .request_id = first_id + 1,
                            .function_id = function_id<counted>()},
                           {}, std::string("\xff\xff\xff", 3)),
                     0xfa, 3));
  EXPECT_EQ(hex(peer_.read_frame()),
            hex(refusal(first_id + 1, "unknown must-understand flag bit 0x02 (flags 0xfa)")));
  EXPECT_EQ(counted_runs, 0);
  expect_still_serving(first_id + 2);
}

// Bits 4-7 are optional: the unassigned ones (5-7; bit 4 says the client accepts compressed
// replies) are ignored, as version 2 or 3.
TEST_F(ServerMustUnderstand, OptionalBitsAreIgnored) {
  for (std::uint8_t version : {2, 3}) {
    const std::uint64_t id = first_id + version;
    peer_.send(crafted(request<counted>(id, {}, "x"), 0xe0, version));
    EXPECT_EQ(hex(peer_.read_frame()), hex(response(id, std::string("x")))) << int{version};
  }
  EXPECT_EQ(counted_runs, 2);
}

// A traced request is sent as version 3; one from a sender before version 3 (version 2, the
// same bit) still works. The handler sees the caller's trace either way.
TEST_F(ServerMustUnderstand, TracedRequestsWorkAsVersion3AndVersion2) {
  const std::string seen = "hello " + hex(unhex(w3c_trace_id));
  for (std::uint8_t version : {3, 2}) {
    const std::uint64_t id = first_id + version;
    peer_.send(traced_request<trace_seen>(id, flag_trace, version, "hello"));
    EXPECT_EQ(hex(peer_.read_frame()), hex(response(id, seen))) << int{version};
  }
  // With an optional bit beside it too.
  peer_.send(traced_request<trace_seen>(first_id + 4, flag_trace | 0x80, 3, "hello"));
  EXPECT_EQ(hex(peer_.read_frame()), hex(response(first_id + 4, seen)));
}

// Versions 2 and 3 are spoken; 1 and 4 are refused as before: protocol_error, id 0, close.
TEST_F(ServerMustUnderstand, VersionsOtherThan2And3AreRefused) {
  peer_.send(traced_request<trace_seen>(first_id, flag_trace, 3, "v3"));
  EXPECT_EQ(hex(peer_.read_frame()), hex(response(first_id, "v3 " + hex(unhex(w3c_trace_id)))));
  for (std::uint8_t version : {1, 4}) {
    raw_peer peer;
    peer.connect(server_.port());
    peer.send(traced_request<trace_seen>(first_id, flag_trace, version, "x"));
    EXPECT_EQ(hex(peer.read_frame()),
              hex(error_response(0, rpc_errc::protocol_error,
                                 "unsupported protocol version (this build speaks corvid protocol "
                                 "versions 2 and 3)")))
        << int{version};
    EXPECT_TRUE(peer.closed_by_peer()) << int{version};
  }
}

// A ping with an unknown must-understand bit gets no pong; the connection goes on.
TEST_F(ServerMustUnderstand, PingWithAnUnknownBitIsNotAnswered) {
  std::string ping = frame({.type = msg_type::ping, .request_id = 5}, {});
  peer_.send(crafted(ping, 0x01, 3));  // trace is a request's bit: unknown on a ping
  expect_still_serving(first_id);      // the echo's reply is the next frame, no pong before it
  peer_.send(ping);
  EXPECT_EQ(hex(peer_.read_frame()),
            hex(frame({.type = msg_type::pong, .request_id = 5, .reactors = 1}, {})));
}

// A stream frame with an unknown must-understand bit fails its stream with bad_request; the
// connection goes on.
TEST_F(ServerMustUnderstand, StreamItemWithAnUnknownBitFailsTheStream) {
  const std::uint64_t id = first_id;
  peer_.send(frame({.type = msg_type::request,
                    .request_id = id,
                    .function_id = function_id<corvid_test::streams::upload>()},
                   {}));
  // The server grants the client credit when the handler starts.
  frame_header h;
  const std::string credit = peer_.read_frame();
  ASSERT_EQ(decode_header(credit.data(), h, UINT32_MAX), header_errc::ok);
  ASSERT_EQ(h.type, msg_type::stream_credit);
  peer_.send(crafted(frame({.type = msg_type::stream_item, .request_id = id}, {}, std::string("a")),
                     0x02, 3));  // (0x04 on an item is compression)
  EXPECT_EQ(hex(peer_.read_frame()),
            hex(refusal(id, "unknown must-understand flag bit 0x02 (flags 0x02)")));
  expect_still_serving(id + 1);
}

// ---- the client's side --------------------------------------------------------------------

class ClientMustUnderstand : public ::testing::Test {
 protected:
  void SetUp() override {
    acceptor_.open(asio::ip::tcp::v4());
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
  }
  std::string address() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  static client_config config() {
    client_config c;
    c.request_timeout = 10s;  // bounds a hang if the client never sees its reply
    return c;
  }
  raw_peer server_;
  asio::ip::tcp::acceptor acceptor_{server_.io()};
  rpc_client client_{config()};
};

std::string failure(const rpc_error& e) {
  return std::to_string(static_cast<int>(e.code())) + ": " + e.message();
}
template <class Result>
std::string outcome(const Result& r) {
  if (!r) return failure(r.error());
  if constexpr (requires { r->value; }) {
    return r->value;  // send_request's result: the value beside the reply's attachment
  } else {
    return *r;
  }
}

task<std::vector<std::string>> three_echoes(rpc_client& client, std::string address) {
  if (auto ec = co_await client.connect(address)) co_return std::vector<std::string>{ec.message()};
  auto a = co_await client.send_request<echo>("a");
  auto b = co_await client.send_request<echo>("b");
  std::vector<std::string> out;
  out.push_back(outcome(co_await std::move(a)));
  out.push_back(outcome(co_await std::move(b)));
  out.push_back(outcome(co_await client.call<echo>("c")));
  co_return out;
}

std::uint64_t id_of(const std::string& frame) {
  frame_header h;
  return decode_header(frame.data(), h, UINT32_MAX) == header_errc::ok ? h.request_id : 0;
}

// A response with an unknown must-understand bit ends its call with protocol_error naming the
// bit; the other call in flight and the next one are answered on the same connection.
TEST_F(ClientMustUnderstand, UnknownBitOnAResponseFailsOnlyThatCall) {
  auto calls =
      std::async(std::launch::async, [&] { return sync_wait(three_echoes(client_, address())); });
  server_.accept(acceptor_);
  const std::uint64_t a = id_of(server_.read_frame());
  const std::uint64_t b = id_of(server_.read_frame());
  server_.send(crafted(response(a, std::string("a")), 0x02, 3) + response(b, std::string("b")));
  const std::uint64_t c = id_of(server_.read_frame());
  server_.send(response(c, std::string("c")));
  EXPECT_EQ(calls.get(),
            (std::vector<std::string>{std::to_string(static_cast<int>(rpc_errc::protocol_error)) +
                                          ": unknown must-understand flag bit 0x02 (flags 0x02)",
                                      "b", "c"}));
}

}  // namespace
}  // namespace corvid::protocol::test
