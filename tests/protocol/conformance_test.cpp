// The doc's frames against the real implementation: raw bytes from docs/protocol.md are sent
// to a live rpc_server and its replies must be the doc's bytes; a fake server checks that
// rpc_client puts the doc's bytes on the wire and accepts replies out of order.
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "corvid/corvid.hpp"

#include "raw_peer.hpp"
#include "wire_util.hpp"

namespace corvid::protocol::test {
namespace {

using namespace std::chrono_literals;

std::uint64_t request_id_of(std::string_view frame) {
  frame_header h;
  return decode_header(frame.data(), h, UINT32_MAX) == header_errc::ok ? h.request_id : ~0ull;
}

class ServerConformance : public raw_server_test {
 protected:
  void SetUp() override {
    server_.register_handler<echo, store>();
    server_.register_handler<&ns::calc::add, &ns::calc::div>(&calc_);
    start();
  }
  // Reads n frames; replies may come in any order, so they are keyed by request id.
  std::map<std::uint64_t, std::string> read_frames(int n) {
    std::map<std::uint64_t, std::string> out;
    for (int i = 0; i < n; ++i) {
      std::string f = peer_.read_frame();
      out[request_id_of(f)] = f;
    }
    return out;
  }
  void expect_reply(const std::map<std::uint64_t, std::string>& got, const std::string& name) {
    const std::string& want = doc_.at(name);
    auto it = got.find(request_id_of(want));
    ASSERT_NE(it, got.end()) << "no reply for " << name;
    EXPECT_EQ(hex(it->second), hex(want)) << name;
  }

  std::map<std::string, std::string> doc_ = doc_vectors();
  ns::calc calc_;
};

TEST_F(ServerConformance, PipelinedRequestsGetTheDocReplies) {
  peer_.send(doc_.at("echo_request") + doc_.at("store_request") + doc_.at("add_request"));
  const auto got = read_frames(3);
  expect_reply(got, "echo_response");
  expect_reply(got, "store_response");
  expect_reply(got, "add_response");
}

TEST_F(ServerConformance, PerRequestErrorsKeepTheConnectionOpen) {
  // Framing is intact after each of these, so only the one request fails.
  peer_.send(request<&ns::calc::mod>(first_id + 3, {}, 7, 2) +
             request<&ns::calc::div>(first_id + 4, {}, 1, 0) +
             frame({.request_id = first_id + 5, .function_id = function_id<echo>()}, {}));
  const auto got = read_frames(3);
  expect_reply(got, "not_found_response");
  expect_reply(got, "handler_error_response");
  expect_reply(got, "bad_request_response");
  peer_.send(doc_.at("echo_request"));
  EXPECT_EQ(hex(peer_.read_frame()), hex(doc_.at("echo_response")));
}

TEST_F(ServerConformance, FramesMaySplitAcrossSegments) {
  const std::string req = doc_.at("echo_request");
  for (std::size_t cut : {std::size_t{1}, std::size_t{31}, std::size_t{33}}) {
    peer_.send(req.substr(0, cut));
    std::this_thread::sleep_for(10ms);  // about time: the rest arrives in a later segment
    peer_.send(req.substr(cut));
    EXPECT_EQ(hex(peer_.read_frame()), hex(doc_.at("echo_response"))) << cut;
  }
}

TEST_F(ServerConformance, OversizedFrameIsRefusedByHeaderThenClosed) {
  peer_.send(doc_.at("too_large_request"));  // the header alone: no payload is ever sent
  EXPECT_EQ(hex(peer_.read_frame()), hex(doc_.at("too_large_response")));
  EXPECT_TRUE(peer_.closed_by_peer());
}

TEST_F(ServerConformance, NonCorvidStreamGetsProtocolErrorThenClose) {
  peer_.send("GET / HTTP/1.1\r\nHost: corvid\r\n\r\n");  // 32 bytes: one "header"
  EXPECT_EQ(hex(peer_.read_frame()), hex(doc_.at("protocol_error_response")));
  EXPECT_TRUE(peer_.closed_by_peer());
}

TEST_F(ServerConformance, TracedRequestGetsTheDocReply) {
  peer_.send(doc_.at("traced_echo_request"));
  EXPECT_EQ(hex(peer_.read_frame()), hex(doc_.at("traced_echo_response")));
}

// A request with a must-understand flag bit the server does not know: refused alone, and the
// connection goes on.
TEST_F(ServerConformance, UnknownMustUnderstandBitGetsTheDocReply) {
  peer_.send(doc_.at("unknown_flag_request") + doc_.at("echo_request"));
  EXPECT_EQ(hex(peer_.read_frame()), hex(doc_.at("unknown_flag_response")));
  EXPECT_EQ(hex(peer_.read_frame()), hex(doc_.at("echo_response")));
}

// Each broken header: an id-0 protocol_error naming the problem, then the server closes.
TEST_F(ServerConformance, BadHeadersGetConnectionLevelErrors) {
  struct bad {
    std::size_t offset;
    char value;
    std::string message;
  };
  // A version-1 or version-4 peer hears which versions this server speaks.
  const bad cases[] = {
      {2, 1, "unsupported protocol version (this build speaks corvid protocol versions 2 and 3)"},
      {2, 4, "unsupported protocol version (this build speaks corvid protocol versions 2 and 3)"},
      {3, 0x7f, "unknown message type"},
      {3, 2, "expected a request frame"}};
  for (const auto& c : cases) {
    raw_peer peer;
    peer.connect(server_.port());
    std::string req = doc_.at("echo_request");
    req[c.offset] = c.value;
    peer.send(req);
    EXPECT_EQ(hex(peer.read_frame()), hex(error_response(0, rpc_errc::protocol_error, c.message)));
    EXPECT_TRUE(peer.closed_by_peer()) << c.message;
  }
}

// A good request before the bad frame is answered; nothing after it is processed.
TEST_F(ServerConformance, StopsAtTheFirstBadFrame) {
  peer_.send(doc_.at("echo_request") + "GET / HTTP/1.1\r\nHost: corvid\r\n\r\n" +
             doc_.at("add_request"));
  const auto got = read_frames(2);
  expect_reply(got, "echo_response");
  expect_reply(got, "protocol_error_response");
  EXPECT_TRUE(peer_.closed_by_peer());
}

// A server states its reactor count in the pong (a 2-reactor server answers the doc's pong);
// the ping changes nothing else: a request after it gets the doc's reply.
TEST_F(ServerConformance, PongStatesTheReactorCount) {
  server_config two = one_reactor();
  two.io_threads = 2;
  rpc_server server(two);
  server.register_handler<echo>();
  ASSERT_FALSE(server.async_start());
  raw_peer peer;
  peer.connect(server.port());
  peer.send(doc_.at("ping_frame") + doc_.at("echo_request"));
  EXPECT_EQ(hex(peer.read_frame()), hex(doc_.at("pong_frame")));
  EXPECT_EQ(hex(peer.read_frame()), hex(doc_.at("echo_response")));
  // This fixture's server has one reactor.
  peer_.send(doc_.at("ping_frame"));
  std::string one = doc_.at("pong_frame");
  one[16] = 1;
  EXPECT_EQ(hex(peer_.read_frame()), hex(one));
}

// ---- the client's side --------------------------------------------------------------------

task<std::vector<std::string>> pipelined_calls(rpc_client& client, std::uint16_t port) {
  std::vector<std::string> out;
  if (auto ec = co_await client.connect("127.0.0.1:" + std::to_string(port))) {
    out.push_back(ec.message());
    co_return out;
  }
  auto e = co_await client.send_request<echo>("hello");
  auto s = co_await client.send_request_with<store>({.attachment = "\xde\xad\xbe\xef"}, "k1");
  auto a = co_await client.send_request<&ns::calc::add>(1, 2);
  auto er = co_await std::move(e);
  auto sr = co_await std::move(s);
  auto ar = co_await std::move(a);
  out.push_back(er ? *er : er.error().message());
  out.push_back(sr ? "ok" : sr.error().message());
  out.push_back(ar ? std::to_string(*ar) : ar.error().message());
  co_return out;
}

class ClientConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    acceptor_.open(asio::ip::tcp::v4());
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  static client_config config() {
    client_config c;
    c.request_timeout = 10s;  // bounds a hang if the client never sees its reply
    return c;
  }

  std::map<std::string, std::string> doc_ = doc_vectors();
  raw_peer server_;
  asio::ip::tcp::acceptor acceptor_{server_.io()};
  rpc_client client_{config()};
};

// The doc's requests carry no deadline; the client sends its configured 10 s budget in the
// timeout field (offset 28) of every request frame. Patch that into the expected bytes.
std::string with_timeout(std::string frames, std::uint32_t ms) {
  for (std::size_t at = 0; at + header_size <= frames.size();) {
    frame_header h;
    EXPECT_EQ(decode_header(frames.data() + at, h, UINT32_MAX), header_errc::ok);
    for (int i = 0; i < 4; ++i) frames[at + 28 + i] = static_cast<char>((ms >> (8 * i)) & 0xff);
    at += h.frame_size();
  }
  return frames;
}

TEST_F(ClientConformance, SendsTheDocRequestsAndMatchesRepliesById) {
  auto calls =
      std::async(std::launch::async, [&] { return sync_wait(pipelined_calls(client_, port())); });
  server_.accept(acceptor_);
  const std::string want = with_timeout(
      doc_.at("echo_request") + doc_.at("store_request") + doc_.at("add_request"), 10000);
  EXPECT_EQ(hex(server_.read(want.size())), hex(want));
  // Replies in reverse order: the client must route them by request id.
  server_.send(doc_.at("add_response") + doc_.at("store_response") + doc_.at("echo_response"));
  EXPECT_EQ(calls.get(), (std::vector<std::string>{"hello", "ok", "3"}));
}

task<rpc_error> one_echo(rpc_client& client, std::uint16_t port) {
  if (auto ec = co_await client.connect("127.0.0.1:" + std::to_string(port))) co_return ec;
  auto r = co_await client.call<echo>("x");
  co_return r ? rpc_error{} : r.error();
}

// Request id 0 with an error status is about the connection: every pending call gets it.
TEST_F(ClientConformance, IdZeroErrorFailsPendingCalls) {
  auto call = std::async(std::launch::async, [&] { return sync_wait(one_echo(client_, port())); });
  server_.accept(acceptor_);
  const std::string req = with_timeout(request<echo>(first_id, {}, "x"), 10000);
  EXPECT_EQ(hex(server_.read(req.size())), hex(req));
  server_.send(doc_.at("protocol_error_response"));
  const rpc_error e = call.get();
  EXPECT_EQ(e.code(), rpc_errc::protocol_error);
  EXPECT_EQ(e.message(), "bad magic (not a corvid stream)");
}

// A call made in a trace context carries it exactly as the doc shows, as version 3 (the
// request id is the connection's first, the timeout the client's default).
TEST_F(ClientConformance, SendsTheTraceContextAsTheDocShows) {
  auto call = std::async(std::launch::async, [&] {
    return sync_wait([&]() -> task<std::string> {
      if (auto ec = co_await client_.connect("127.0.0.1:" + std::to_string(port())))
        co_return ec.message();
      const auto t =
          *trace_context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
      // Per call, not a trace_scope: a scope must not live across a co_await (it belongs to
      // the thread, and the coroutine resumes on the client's reactor).
      call_options options;
      options.trace = &t;
      auto r = co_await client_.send_request_with<echo>(options, "hello");
      auto v = co_await std::move(r);
      co_return v ? v->value : v.error().message();
    }());
  });
  server_.accept(acceptor_);
  std::string want = with_timeout(doc_.at("traced_echo_request"), 10000);
  for (int i = 0; i < 8; ++i) want[8 + i] = static_cast<char>((first_id >> (8 * i)) & 0xff);
  const std::string got = server_.read(want.size());
  EXPECT_EQ(hex(got), hex(want));
  EXPECT_EQ(got.substr(2, 1), "\x03");
  server_.send(doc_.at("echo_response"));
  EXPECT_EQ(call.get(), "hello");
}

// A client that asks (as client_pool's connections do) sends the doc's ping first, then its
// request; a server that states its reactors is heard, and one that predates it (a plain pong,
// function id 0) leaves the count at 0 while the call goes through either way.
TEST_F(ClientConformance, AsksTheReactorCountWithAPingFirst) {
  for (bool states : {true, false}) {
    client_config cfg = config();
    cfg.ask_server_reactors = true;
    rpc_client client(cfg);
    raw_peer server;
    asio::ip::tcp::acceptor acceptor{server.io()};  // on the peer's io_context, as accept needs
    acceptor.open(asio::ip::tcp::v4());
    acceptor.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor.listen();
    const std::uint16_t at = acceptor.local_endpoint().port();
    auto call = std::async(std::launch::async, [&] { return sync_wait(one_echo(client, at)); });
    server.accept(acceptor);
    const std::string req = with_timeout(request<echo>(first_id, {}, "x"), 10000);
    EXPECT_EQ(hex(server.read(header_size + req.size())), hex(doc_.at("ping_frame") + req));
    std::string pong = doc_.at("pong_frame");
    if (!states) pong[16] = 0;  // an older server's pong
    server.send(pong + response(first_id, std::string("x")));
    EXPECT_FALSE(call.get()) << states;
    EXPECT_EQ(client.server_reactors(), states ? 2u : 0u);
  }
}

}  // namespace
}  // namespace corvid::protocol::test
