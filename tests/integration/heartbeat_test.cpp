// Heartbeats and read deadlines: half-open connections are found on both sides within the
// configured time, healthy idle ones are kept, and a peer dribbling a frame is cut off.
#include <atomic>
#include <mutex>
#include <thread>

#include "test_support.hpp"

namespace corvid_test {
namespace {

TEST(Heartbeat, ClientDetectsAServerThatStoppedAnswering) {
  silent_server silent;
  corvid::client_config cfg;
  cfg.heartbeat_interval = 50ms;
  cfg.heartbeat_timeout = 300ms;
  cfg.request_timeout = 0ms;  // only the heartbeat can end the call
  corvid::rpc_client client(cfg);
  const auto start = std::chrono::steady_clock::now();  // before the silence can begin
  ASSERT_FALSE(corvid::sync_wait(connect(client, silent.endpoint())));
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call<echo>("anyone?");
      }());
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
  EXPECT_NE(r.error().message().find("heartbeat"), std::string::npos) << r.error().message();
  EXPECT_GE(took, 300ms);  // a timer never fires early
  EXPECT_LT(took, 5s);     // it hung
  EXPECT_GE(client.stats().pings_sent, 1u);
  EXPECT_EQ(client.stats().dead_peer_closes, 1u);
  EXPECT_FALSE(client.is_connected());
}

TEST(Heartbeat, IdleButHealthyConnectionsAreKept) {
  test_server s;
  corvid::client_config cfg;
  cfg.heartbeat_interval = 30ms;
  cfg.heartbeat_timeout = 200ms;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  // Four timeouts' worth of silence from the caller, counted in pings.
  EXPECT_TRUE(eventually([&] { return client.stats().pings_sent >= 27; }));
  EXPECT_TRUE(client.is_connected());
  EXPECT_EQ(client.stats().dead_peer_closes, 0u);
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call<echo>("fine");
      }());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(s.server().stats().frames_received, 1u);  // pings are not counted as calls
}

TEST(Heartbeat, ServerDetectsAClientThatStoppedAnswering) {
  auto cfg = test_server::make_config();
  cfg.heartbeat_interval = 50ms;
  cfg.heartbeat_timeout = 300ms;
  test_server s(cfg);
  const auto begin = std::chrono::steady_clock::now();
  raw_connection raw(s.port());  // never reads, never answers a ping
  EXPECT_TRUE(eventually([&] { return s.server().connection_count() == 1; }));
  EXPECT_TRUE(raw.closed_by_peer());  // within the raw socket's 5 s receive timeout
  // Not before the 300 ms of silence the server was told to allow.
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 250ms);
  EXPECT_TRUE(eventually([&] { return s.server().connection_count() == 0; }));
  EXPECT_EQ(s.server().stats().dead_peer_closes, 1u);
  EXPECT_GE(s.server().stats().pings_sent, 1u);
}

TEST(Heartbeat, ClientAnswersServerPingsEvenWithItsOwnHeartbeatOff) {
  auto scfg = test_server::make_config();
  scfg.heartbeat_interval = 30ms;
  scfg.heartbeat_timeout = 200ms;
  test_server s(scfg);
  corvid::client_config cfg;
  cfg.heartbeat_interval = 0ms;
  cfg.heartbeat_timeout = 0ms;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  // Four timeouts' worth of the server's pings.
  EXPECT_TRUE(eventually([&] { return s.server().stats().pings_sent >= 27; }));
  EXPECT_TRUE(client.is_connected());
  EXPECT_EQ(s.server().connection_count(), 1u);
  EXPECT_EQ(s.server().stats().dead_peer_closes, 0u);
  EXPECT_EQ(client.stats().pings_sent, 0u);
}

TEST(Heartbeat, PingsDoNotKeepAnIdleConnectionOpen) {
  auto scfg = test_server::make_config();
  scfg.idle_timeout = 300ms;
  test_server s(scfg);
  corvid::client_config cfg;
  cfg.heartbeat_interval = 30ms;
  corvid::rpc_client client(cfg);
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  EXPECT_TRUE(eventually([&] { return !client.is_connected(); }));
  EXPECT_GE(client.stats().pings_sent, 2u);
}

TEST(FrameReadTimeout, ADribbledFrameIsCutOff) {
  auto scfg = test_server::make_config();
  scfg.frame_read_timeout = 300ms;
  test_server s(scfg);
  raw_connection raw(s.port());
  const std::string frame =
      request_frame(1, corvid::protocol::function_id<echo>(), std::string_view("slow"));
  const auto start = std::chrono::steady_clock::now();
  raw.send(frame.substr(0, 10));  // a third of the header, then nothing (slowloris)
  EXPECT_TRUE(raw.closed_by_peer());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_TRUE(eventually([&] { return s.server().connection_count() == 0; }));
}

TEST(FrameReadTimeout, SteadyTrafficIsNotCutOff) {
  auto scfg = test_server::make_config();
  scfg.frame_read_timeout = 200ms;
  test_server s(scfg);
  raw_connection raw(s.port());
  // Frames split across writes, each completed within the limit, for 3× the limit.
  const std::string frame =
      request_frame(1, corvid::protocol::function_id<echo>(), std::string_view("ok"));
  for (int i = 0; i < 12; ++i) {
    raw.send(frame.substr(0, 20));
    std::this_thread::sleep_for(50ms);  // about time: a pause well inside the limit
    raw.send(frame.substr(20));
    auto f = raw.read_frame();
    ASSERT_TRUE(f) << "closed after " << i << " frames";
    EXPECT_EQ(f->header.status, corvid::rpc_errc::ok);
  }
}

}  // namespace
}  // namespace corvid_test
