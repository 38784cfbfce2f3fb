// RDMA under pressure and failure (the tests' provider): a receiver with one receive buffer
// under a send flood (the provider's RNR counter shows it ran out), RNR retries forced to 0,
// the pool watermark, and a peer process killed mid-call. Every call ends, with a value or a
// clear error; nothing hangs.
#include <optional>
#include <vector>

#include "peer_process.hpp"
#include "rdma/rdma_context.hpp"
#include "rdma_support.hpp"

namespace corvid_rdma_test {
namespace {

// RNR events so far on the device `cfg` opens (every endpoint of the process with the same
// provider, device, port and GID index shares it); nullopt when the provider does not count.
std::optional<std::uint64_t> device_rnr_naks(const corvid::ibv_config& cfg) {
  auto ctx = corvid::rdma::rdma_context::open(cfg);
  if (!ctx) throw std::runtime_error(ctx.error().message());
  return (*ctx)->device().rnr_naks();
}

// Sends `n` calls of `size` bytes (small replies) while the server's reactor for this
// connection sleeps in block_ms: SENDs pile up at its one receive buffer, so all but the
// first meet an empty receive queue when it wakes. Returns the calls' errors.
std::vector<corvid::rpc_error> flood_a_blocked_server(corvid::rpc_client& client, int n,
                                                      std::size_t size) {
  const std::string big = pattern(size, 5);
  return corvid::sync_wait([&]() -> corvid::task<std::vector<corvid::rpc_error>> {
    auto blocked = co_await client.send_request<block_ms>(300);
    co_await corvid::sleep_for(50ms);
    std::vector<corvid::async_reply_t<length>> flood;
    for (int i = 0; i < n; ++i) flood.push_back(co_await client.send_request<length>(big));
    std::vector<corvid::rpc_error> out;
    auto b = co_await std::move(blocked);
    if (!b) out.push_back(b.error());
    for (auto& p : flood) {
      auto r = co_await std::move(p);
      if (!r) {
        out.push_back(r.error());
      } else if (*r != size) {
        out.emplace_back(corvid::rpc_errc::protocol_error, "the server read a different size");
      }
    }
    co_return out;
  }());
}

// Small chunks and a wide send window, so that every SEND the client posts while the server
// sleeps fits in the provider's buffers: the server then finds them all at once.
corvid::ibv_config small_chunks(corvid::ibv_config c) {
  c.chunk_size = 16 * 1024;
  c.send_window = 8;
  return c;
}

TEST(rdma_failure, one_receive_buffer_under_a_send_flood_default_policy) {
  corvid::ibv_config tiny = small_chunks(test_ibv());
  tiny.recv_buffers = 1;
  rdma_server srv(tiny);
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint(), small_chunks(test_ibv()));
  const auto rnr_before = device_rnr_naks(tiny);
  const auto errors = flood_a_blocked_server(client, 6, 100 * 1024);  // 7 SENDs each
  for (const auto& e : errors) ADD_FAILURE() << e.message();
  EXPECT_EQ(client.stats().rdma_errors, 0u);  // RNR back-off and retry, never an error
  EXPECT_EQ(srv.server().stats().rdma_errors, 0u);
  EXPECT_TRUE(client.is_connected());
  // The receiver really ran out of posted receives (and the default policy rode it out).
  const auto rnr_after = device_rnr_naks(tiny);
  // ibverbs reads the port's hw_counters (rxe and mlx5 export them): not counting is a failure
  // there, not a reason to skip.
  ASSERT_TRUE(rnr_after) << "the provider does not count RNR NAKs";
  EXPECT_GT(*rnr_after, *rnr_before) << "the flood never met an empty receive queue";
}

TEST(rdma_failure, rnr_retries_forced_to_zero_fail_the_connection_clearly) {
  corvid::ibv_config tiny = small_chunks(test_ibv());
  tiny.recv_buffers = 1;
  rdma_server srv(tiny);
  corvid::ibv_config impatient = small_chunks(test_ibv());
  impatient.rnr_retry = 0;
  corvid::client_config cc;
  cc.request_timeout = 20s;
  corvid::rpc_client client(cc);
  connect_rdma(client, srv.endpoint(), impatient);
  const auto begin = std::chrono::steady_clock::now();
  const auto errors = flood_a_blocked_server(client, 4, 100 * 1024);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 10s) << "calls hung";
  ASSERT_FALSE(errors.empty()) << "the flood never met an empty receive queue";
  // The receiver's RNR NAK is what failed the queue pair, and that is the reason given —
  // never "the peer did not acknowledge", though the receiver hangs up right after it.
  for (const auto& e : errors) {
    EXPECT_EQ(e.code(), corvid::rpc_errc::connection_closed) << e.message();
    EXPECT_NE(e.message().find("RNR retries ran out"), std::string::npos) << e.message();
  }
  EXPECT_GE(client.stats().rdma_rnr_errors, 1u);
  EXPECT_FALSE(client.is_connected());
}

TEST(rdma_failure, pool_watermark_refuses_a_new_connection_and_keeps_the_old) {
  corvid::ibv_config small = test_ibv();
  small.chunk_size = 64 * 1024;
  small.pool_watermark = 12 * small.chunk_size;  // one connection takes 8 + 2 chunks
  rdma_server srv(small);
  corvid::rpc_client first, second;
  connect_rdma(first, srv.endpoint());
  ASSERT_FALSE(second.init_ibv(test_ibv()));
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
TEST(rdma_failure, peer_killed_mid_call_ends_pending_calls_with_connection_closed) {
  corvid::test::peer_process peer(CORVID_RDMA_PEER);
  corvid::rpc_client client;
  connect_rdma(client, "127.0.0.1:" + std::to_string(peer.port()));
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
