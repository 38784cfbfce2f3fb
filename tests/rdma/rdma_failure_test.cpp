// RDMA under pressure and failure (softverbs): a receiver with one receive buffer under a
// send flood, RNR retries forced to 0, the pool watermark, and a peer process killed
// mid-call. Every call ends, with a value or a clear error; nothing hangs.
#include <csignal>
#include <cstdio>
#include <spawn.h>
#include <unistd.h>
#include <vector>

#include "rdma_support.hpp"
#include <sys/wait.h>

extern char** environ;

namespace corvid_rdma_test {
namespace {

TEST(rdma_failure, one_receive_buffer_under_a_send_flood_default_policy) {
  corvid::ibv_config tiny = soft();
  tiny.recv_buffers = 1;
  rdma_server srv(tiny);
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  const std::string payload = pattern(64 * 1024, 3);
  const int ok = corvid::sync_wait([&]() -> corvid::task<int> {
    std::vector<corvid::async_reply_t<echo>> pending;
    for (int i = 0; i < 300; ++i) pending.push_back(co_await client.send_request<echo>(payload));
    int good = 0;
    for (auto& p : pending) {
      auto r = co_await std::move(p);
      if (r && *r == payload) ++good;
    }
    co_return good;
  }());
  EXPECT_EQ(ok, 300);
  EXPECT_EQ(client.stats().rdma_errors, 0u);  // RNR back-off and retry, never an error
  EXPECT_EQ(srv.server().stats().rdma_errors, 0u);
}

TEST(rdma_failure, rnr_retries_forced_to_zero_fail_the_connection_clearly) {
  corvid::ibv_config tiny = soft();
  tiny.recv_buffers = 1;
  rdma_server srv(tiny);
  corvid::ibv_config impatient = soft();
  impatient.rnr_retry = 0;
  corvid::client_config cc;
  cc.request_timeout = 20s;
  corvid::rpc_client client(cc);
  connect_rdma(client, srv.endpoint(), impatient);
  const std::string big = pattern(600 * 1024, 5);  // three 256 KiB SENDs, two in flight
  const auto begin = std::chrono::steady_clock::now();
  auto errors = corvid::sync_wait([&]() -> corvid::task<std::vector<corvid::rpc_error>> {
    // The server's only reactor thread for this connection sleeps: SENDs pile up at its one
    // receive buffer, and the second finds none posted.
    auto blocked = co_await client.send_request<block_ms>(300);
    co_await corvid::sleep_for(50ms);
    std::vector<corvid::async_reply_t<echo>> flood;
    for (int i = 0; i < 4; ++i) flood.push_back(co_await client.send_request<echo>(big));
    std::vector<corvid::rpc_error> out;
    auto b = co_await std::move(blocked);
    if (!b) out.push_back(b.error());
    for (auto& p : flood) {
      auto r = co_await std::move(p);
      if (!r) out.push_back(r.error());
    }
    co_return out;
  }());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 10s) << "calls hung";
  ASSERT_FALSE(errors.empty()) << "the flood never met an empty receive queue";
  for (const auto& e : errors) {
    EXPECT_EQ(e.code(), corvid::rpc_errc::connection_closed) << e.message();
    EXPECT_NE(e.message().find("RDMA send failed"), std::string::npos) << e.message();
  }
  // Usually "RNR retries ran out"; softverbs sometimes reports the receiver's RNR refusal as
  // the peer vanishing (it closes right after its NAK), which is still a clear failure.
  EXPECT_GE(client.stats().rdma_errors, 1u);
  EXPECT_FALSE(client.is_connected());
}

TEST(rdma_failure, pool_watermark_refuses_a_new_connection_and_keeps_the_old) {
  corvid::ibv_config small = soft();
  small.chunk_size = 64 * 1024;
  small.pool_watermark = 12 * small.chunk_size;  // one connection takes 8 + 2 chunks
  rdma_server srv(small);
  corvid::rpc_client first, second;
  connect_rdma(first, srv.endpoint());
  ASSERT_FALSE(second.init_ibv(soft()));
  auto ec = corvid::sync_wait(connect(second, srv.endpoint()));
  ASSERT_TRUE(ec);
  EXPECT_EQ(ec.code(), corvid::rpc_errc::server_busy) << ec.message();
  EXPECT_NE(ec.message().find("watermark"), std::string::npos) << ec.message();
  EXPECT_FALSE(second.is_connected());
  // The first connection carries on, big frames included.
  const std::string data = pattern(1 << 20, 11);
  auto r = run(first.call<echo>(data));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(*r == data);
  // Once the first leaves, its chunks serve a newcomer.
  first.close();
  const auto until = std::chrono::steady_clock::now() + 5s;
  corvid::rpc_error retry;
  do {
    std::this_thread::sleep_for(20ms);
    retry = corvid::sync_wait(connect(second, srv.endpoint()));
  } while (retry && std::chrono::steady_clock::now() < until);
  EXPECT_FALSE(retry) << retry.message();
}

#ifdef CORVID_RDMA_PEER
// The peer: a separate process (tests/rdma/rdma_test_peer.cpp) serving block_ms over RDMA.
class peer_process {
 public:
  peer_process() {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    char* argv[] = {const_cast<char*>(CORVID_RDMA_PEER), nullptr};
    const int rc = posix_spawn(&pid_, CORVID_RDMA_PEER, &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    if (rc != 0) throw std::runtime_error("spawn " + std::string(CORVID_RDMA_PEER));
    FILE* f = ::fdopen(out[0], "r");
    unsigned p = 0;
    if (std::fscanf(f, "port %u", &p) != 1) throw std::runtime_error("peer did not start");
    std::fclose(f);
    port_ = static_cast<std::uint16_t>(p);
  }
  ~peer_process() { kill(); }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

TEST(rdma_failure, peer_killed_mid_call_ends_pending_calls_with_connection_closed) {
  peer_process peer;
  corvid::rpc_client client;
  connect_rdma(client, peer.endpoint());
  ASSERT_TRUE(run(client.call<add>(1, 2)));  // the link works
  const auto begin = std::chrono::steady_clock::now();
  auto results = corvid::sync_wait([&]() -> corvid::task<std::vector<corvid::rpc_error>> {
    std::vector<corvid::async_reply_t<block_ms>> pending;
    for (int i = 0; i < 8; ++i) pending.push_back(co_await client.send_request<block_ms>(5000));
    co_await corvid::sleep_for(200ms);
    peer.kill();
    std::vector<corvid::rpc_error> out;
    for (auto& p : pending) {
      auto r = co_await std::move(p);
      out.push_back(r ? corvid::rpc_error{} : r.error());
    }
    co_return out;
  }());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 4s) << "pending calls outlived the peer";
  for (const auto& e : results)
    EXPECT_EQ(e.code(), corvid::rpc_errc::connection_closed) << e.message();
  EXPECT_FALSE(client.is_connected());
}
#endif

}  // namespace
}  // namespace corvid_rdma_test
