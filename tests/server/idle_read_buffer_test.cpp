// Idle connections hold no read buffer (issue 38): one that has sent nothing waits for
// readability without one, and one that went quiet after its calls gives its buffer back
// (connection_liveness::buffer_idle), its charge with it. Checked through the server's
// tracked memory, not timing; then that such a connection still reads big frames, and
// frames that arrive in pieces.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../integration/test_support.hpp"
#include "server/connection_liveness.hpp"

namespace corvid_test {
namespace {

constexpr std::size_t n_connections = 20;

std::size_t tracked(corvid::rpc_server& s, std::string_view what) {
  const corvid::memory_usage u = s.memory();
  const corvid::memory_usage* t = u.find(what);
  return t == nullptr ? 0 : t->current;
}

std::size_t read_buffers(corvid::rpc_server& s) { return tracked(s, "read_buffers"); }

// One echo call on `c`: true when the reply carries `text` back.
bool echo_once(raw_connection& c, std::uint64_t id, const std::string& text) {
  c.send_request<echo>(id, 0, text);
  auto f = c.read_frame();
  if (!f || f->header.request_id != id) return false;
  std::string back;
  corvid::codec::decode(f->body, back);
  return back == text;
}

TEST(idle_read_buffer, connections_that_sent_nothing_hold_none) {
  const corvid::server_config cfg = test_server::make_config();
  test_server srv(cfg);
  std::vector<std::unique_ptr<raw_connection>> conns;
  for (std::size_t i = 0; i < n_connections; ++i)
    conns.push_back(std::make_unique<raw_connection>(srv.port()));
  ASSERT_TRUE(eventually([&] { return srv.server().connection_count() == n_connections; }));
  // Each connection's start is posted to its reactor when it is accepted. One call on a
  // later connection per reactor (they take the reactors in turn) has run after those
  // starts: every silent connection has begun reading, or waiting to. Only these probes,
  // which read a call, hold a buffer.
  std::vector<std::unique_ptr<raw_connection>> probes;
  for (std::size_t i = 0; i < cfg.io_threads; ++i) {
    probes.push_back(std::make_unique<raw_connection>(srv.port()));
    ASSERT_TRUE(echo_once(*probes.back(), 1, "probe"));
  }
  EXPECT_LE(read_buffers(srv.server()), probes.size() * cfg.read_buffer_size)
      << srv.server().memory().to_string();
  // Each still answers once it speaks.
  for (auto& c : conns) EXPECT_TRUE(echo_once(*c, 1, "hello"));
}

TEST(idle_read_buffer, connections_give_theirs_back_once_quiet_after_a_call) {
  test_server srv;
  std::vector<std::unique_ptr<raw_connection>> conns;
  for (std::size_t i = 0; i < n_connections; ++i) {
    conns.push_back(std::make_unique<raw_connection>(srv.port()));
    ASSERT_TRUE(echo_once(*conns.back(), 1, "first"));
  }
  EXPECT_GT(read_buffers(srv.server()), 0u);  // each read its call into a buffer
  EXPECT_TRUE(eventually([&] { return read_buffers(srv.server()) == 0; }))
      << srv.server().memory().to_string();
  // Nor do they keep reply credit for a next call.
  EXPECT_TRUE(eventually([&] { return tracked(srv.server(), "queued_replies") == 0; }))
      << srv.server().memory().to_string();
  for (auto& c : conns) EXPECT_TRUE(echo_once(*c, 2, "again"));
}

TEST(idle_read_buffer, an_idle_connection_reads_big_and_split_frames) {
  test_server srv;
  raw_connection c(srv.port());
  ASSERT_TRUE(echo_once(c, 1, "first"));
  ASSERT_TRUE(eventually([&] { return read_buffers(srv.server()) == 0; }));
  // A frame far larger than the read buffer, straight after the idle release.
  ASSERT_TRUE(echo_once(c, 2, std::string(1 << 20, 'b')));
  ASSERT_TRUE(eventually([&] { return read_buffers(srv.server()) == 0; }));
  // A frame in three pieces, with a pause longer than buffer_idle inside it: a buffer that
  // holds a partial frame is not given back, and the frame completes.
  const std::string text(3000, 's');
  const std::string frame = corvid::test::request_frame<echo>(3, 0, text);
  c.send(std::string_view(frame).substr(0, 10));  // part of the header
  std::this_thread::sleep_for(100ms);
  c.send(std::string_view(frame).substr(10, 1000));
  std::this_thread::sleep_for(corvid::detail::connection_liveness::buffer_idle + 300ms);
  EXPECT_GT(read_buffers(srv.server()), 0u);  // the partial frame keeps its buffer
  c.send(std::string_view(frame).substr(1010));
  auto f = c.read_frame();
  ASSERT_TRUE(f.has_value());
  std::string back;
  corvid::codec::decode(f->body, back);
  EXPECT_EQ(back, text);
}

}  // namespace
}  // namespace corvid_test
