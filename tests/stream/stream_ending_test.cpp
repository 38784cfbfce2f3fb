// Streams that end without either side's cooperation: one on which nothing moves for
// server_config::stream_idle_timeout, and one whose peer process is killed with SIGKILL.
// Every stream ends, on both sides, with a clear error.
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "eventually.hpp"
#include "peer_process.hpp"
#include "slowdown.hpp"
#include "stream_handlers.hpp"
#include "stream_server.hpp"

namespace {

using namespace std::chrono_literals;
using namespace corvid_test::streams;
using corvid::test::eventually;
using corvid::test::opened;
using corvid::test::patience;
using corvid::test::stream_server;
using corvid::test::transport;

corvid::server_config idle_after(std::chrono::milliseconds limit) {
  auto cfg = stream_server::config();
  cfg.stream_idle_timeout = limit;
  return cfg;
}

// Reads a stream to its end: the items read, and why it ended.
template <class Reader>
std::pair<int, corvid::rpc_error> drain(Reader& r) {
  return corvid::sync_wait([&]() -> corvid::task<std::pair<int, corvid::rpc_error>> {
    int n = 0;
    while (co_await r.next()) ++n;
    co_return std::pair{n, r.error()};
  }());
}

// A deadline over a whole idle test's stream: if the idle check failed to end it, the test
// fails on the error's message instead of waiting forever.
corvid::call_options bounded() { return {patience(5s), {}}; }

int call_twice(corvid::rpc_client& client, int x) {
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call<twice>(x);
  }());
  return r ? *r : -1;
}

TEST(stream_idle, a_stream_whose_client_reads_nothing_ends_with_timeout_on_both_sides) {
  stream_server srv(transport::tcp, idle_after(200ms));
  auto client = srv.connect();
  const int destroyed = probe().destroyed;
  auto s = opened(client->stream_with<endless>(bounded(), 1024u));
  // The producer fills the client's window and parks; then nothing moves.
  ASSERT_TRUE(eventually([&] { return probe().destroyed > destroyed; }, patience(3s)))
      << "the idle stream's producer was never ended";
  auto [items, err] = drain(s);
  EXPECT_GT(items, 0);  // what was sent before the end is still read
  EXPECT_EQ(err.code(), corvid::rpc_errc::timeout) << err.message();
  EXPECT_NE(err.message().find("stream_idle_timeout"), std::string::npos) << err.message();
  EXPECT_EQ(call_twice(*client, 21), 42) << "the connection was closed with the stream";
}

TEST(stream_idle, a_duplex_stream_is_idle_only_once_it_stops_moving) {
  // A limit far above the 60 ms between messages, even on a loaded machine.
  stream_server srv(transport::tcp, idle_after(500ms));
  auto client = srv.connect();
  auto c = opened(client->open_stream_with<chat>(bounded()));
  // Talking for longer than the limit, a message every 60 ms: never idle.
  std::chrono::steady_clock::time_point last_write;
  const std::string talk = corvid::sync_wait([&]() -> corvid::task<std::string> {
    for (int i = 0; i < 14; ++i) {
      co_await corvid::sleep_for(60ms);  // about time: the pauses between messages
      last_write = std::chrono::steady_clock::now();
      if (auto e = co_await c.write("m" + std::to_string(i)))
        co_return "write " + std::to_string(i) + ": " + e.message();
      auto answer = co_await c.next();
      if (!answer) co_return "ended at " + std::to_string(i) + ": " + c.error().message();
      if (*answer != "re: m" + std::to_string(i)) co_return "wrong answer " + *answer;
    }
    co_return "";
  }());
  EXPECT_EQ(talk, "");
  // Then silence on both sides: the stream ends with timeout; its handler's reader ends.
  auto [items, err] = drain(c);
  EXPECT_EQ(items, 0);
  EXPECT_EQ(err.code(), corvid::rpc_errc::timeout) << err.message();
  EXPECT_NE(err.message().find("stream_idle_timeout"), std::string::npos) << err.message();
  // The server saw its last activity after the last write began; a timer never fires early.
  EXPECT_GE(std::chrono::steady_clock::now() - last_write, 500ms) << "ended before it was idle";
  EXPECT_EQ(call_twice(*client, 4), 8);
}

TEST(stream_idle, zero_turns_the_idle_check_off) {
  stream_server srv(transport::tcp, idle_after(0ms));
  auto client = srv.connect();
  const int destroyed = probe().destroyed;
  auto s = opened(client->stream_with<endless>(bounded(), 1024u));
  // About time: nothing may end the stream meanwhile (a 200 ms idle check, as above, would).
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(probe().destroyed, destroyed);
  const bool reads = corvid::sync_wait([&]() -> corvid::task<bool> {
    for (int i = 0; i < 600; ++i) {  // more than the window held: the producer went on
      if (!co_await s.next()) co_return false;
    }
    co_return true;
  }());
  EXPECT_TRUE(reads) << s.error().message();
}

// A server in another process, killed while a server stream and a duplex stream are open.
TEST(stream_kill, a_server_killed_mid_stream_ends_the_clients_streams_with_connection_closed) {
  corvid::test::peer_process peer(CORVID_STREAM_PEER, {"serve"});
  corvid::rpc_client client;
  const std::string endpoint = "127.0.0.1:" + std::to_string(peer.port());
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, endpoint)));
  auto s = opened(client.stream<endless>(1024u));
  auto c = opened(client.open_stream<chat>());
  const bool live = corvid::sync_wait([&]() -> corvid::task<bool> {
    for (int i = 0; i < 100; ++i) {
      if (!co_await s.next()) co_return false;
    }
    if (co_await c.write("a")) co_return false;
    auto answer = co_await c.next();
    co_return answer&&* answer == "re: a";
  }());
  ASSERT_TRUE(live) << s.error().message() << " / " << c.error().message();
  peer.kill();
  const auto begin = std::chrono::steady_clock::now();
  auto [items, err] = drain(s);
  EXPECT_EQ(err.code(), corvid::rpc_errc::connection_closed) << err.message();
  auto [answers, chat_err] = drain(c);
  EXPECT_EQ(answers, 0);
  EXPECT_EQ(chat_err.code(), corvid::rpc_errc::connection_closed) << chat_err.message();
  EXPECT_TRUE(corvid::sync_wait([&]() -> corvid::task<corvid::rpc_error> {
    co_return co_await c.write("after");
  }()))
      << "a write to a stream whose server died succeeded";
  EXPECT_LT(std::chrono::steady_clock::now() - begin, patience(5s));
}

// A client in another process, killed while it uploads: the handler's reader ends, the
// connection goes, and the memory its items held comes back.
TEST(stream_kill, a_client_killed_mid_upload_ends_the_handlers_reader_and_frees_its_memory) {
  stream_server srv;
  const int ended = uploads().ended;
  const int items = uploads().items;
  const std::size_t baseline = srv.server().memory().current;  // no connection yet
  corvid::test::peer_process peer(CORVID_STREAM_PEER,
                                  {"upload", std::to_string(srv.server().port())});
  ASSERT_EQ(peer.first_line(), "writing");
  ASSERT_TRUE(eventually([&] { return uploads().items > items + 100; }, patience(5s)))
      << "the upload did not flow";
  peer.kill();
  ASSERT_TRUE(eventually([&] { return uploads().ended > ended; }, patience(5s)))
      << "the handler's reader outlived its client";
  EXPECT_EQ(uploads().end_code, static_cast<int>(corvid::rpc_errc::cancelled));
  EXPECT_TRUE(eventually([&] { return srv.server().connection_count() == 0; }, patience(5s)));
  EXPECT_TRUE(eventually([&] { return srv.server().memory().current == baseline; }, patience(5s)))
      << srv.server().memory().to_string();
}

}  // namespace
