// RPC over RDMA (the tests' verbs provider, softverbs by default), end to end through rpc_server /
// rpc_client: the seed example, every grid payload size, pipelining, merging and inline counters,
// TCP and RDMA clients on one server, and the clear errors (no device, no RDMA on the server).
#include <vector>

#include "rdma_support.hpp"

namespace corvid_rdma_test {
namespace {

TEST(rdma_rpc, seed_example) {
  rdma_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  auto r = run(client.call<echo>("hello rdma"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "hello rdma");
  const auto st = client.stats();
  EXPECT_GE(st.rdma_sends, 1u);  // it really went over the queue pair
  EXPECT_GE(st.rdma_receives, 1u);
  EXPECT_GE(srv.server().stats().rdma_receives, 1u);
}

TEST(rdma_rpc, every_grid_payload_size_round_trips_intact) {
  rdma_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  for (std::size_t size : {std::size_t{128}, std::size_t{4096}, std::size_t{32 * 1024},
                           std::size_t{256 * 1024}, std::size_t{1 << 20}, std::size_t{8 << 20}}) {
    const std::string data = pattern(size, static_cast<unsigned>(size));
    auto r = run(client.call<echo>(data));
    ASSERT_TRUE(r) << size << ": " << r.error().message();
    ASSERT_EQ(r->size(), size);
    EXPECT_TRUE(*r == data) << "content differs at " << size;
  }
  EXPECT_EQ(client.stats().rdma_errors, 0u);
}

// Latency mode over RDMA: both sides' reactors spin, and completions (seen through the
// completion queue's fd in the spinning poll) still deliver every reply.
TEST(rdma_rpc, calls_work_with_busy_poll_on_both_sides) {
  auto cfg = server_config();
  cfg.busy_poll = std::chrono::microseconds(200);
  rdma_server srv(test_ibv(), cfg);
  corvid::io_pool reactors(1);
  corvid::client_config cc;
  cc.pool = &reactors;
  cc.busy_poll = std::chrono::microseconds(200);
  corvid::rpc_client client(cc);
  connect_rdma(client, srv.endpoint());
  for (std::size_t size : {std::size_t{16}, std::size_t{4096}, std::size_t{1 << 20}}) {
    const std::string data = pattern(size, static_cast<unsigned>(size));
    for (int i = 0; i < 20; ++i) {
      auto r = run(client.call<echo>(data));
      ASSERT_TRUE(r) << size << ": " << r.error().message();
      ASSERT_TRUE(*r == data) << size;
    }
  }
  EXPECT_GE(client.stats().rdma_receives, 60u);
  EXPECT_EQ(reactors.busy_poll(), std::chrono::microseconds(200));
}

TEST(rdma_rpc, ten_thousand_pipelined_calls) {
  rdma_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  const int ok = corvid::sync_wait([&]() -> corvid::task<int> {
    std::vector<corvid::async_reply_t<add>> pending;
    for (int i = 0; i < 10000; ++i) pending.push_back(co_await client.send_request<add>(i, 1));
    int good = 0;
    for (int i = 0; i < 10000; ++i) {
      auto r = co_await std::move(pending[i]);
      if (r && *r == i + 1) ++good;
    }
    co_return good;
  }());
  EXPECT_EQ(ok, 10000);
}

TEST(rdma_rpc, small_frames_merge_into_fewer_sends_at_c256) {
  rdma_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  const std::string payload = pattern(128, 7);
  constexpr int rounds = 20, concurrency = 256;
  const int ok = corvid::sync_wait([&]() -> corvid::task<int> {
    int good = 0;
    for (int round = 0; round < rounds; ++round) {
      std::vector<corvid::async_reply_t<echo>> window;
      for (int i = 0; i < concurrency; ++i)
        window.push_back(co_await client.send_request<echo>(payload));
      for (auto& p : window) {
        auto r = co_await std::move(p);
        if (r && *r == payload) ++good;
      }
    }
    co_return good;
  }());
  ASSERT_EQ(ok, rounds * concurrency);
  const auto c = client.stats();
  const auto s = srv.server().stats();
  EXPECT_EQ(c.frames_sent, std::uint64_t{rounds * concurrency});
  EXPECT_LT(c.rdma_sends, c.frames_sent) << "client: no merging";
  EXPECT_LT(s.rdma_sends, s.frames_sent) << "server: no merging";
  EXPECT_EQ(c.write_syscalls, c.rdma_sends);  // on RDMA, a "write" is a posted SEND
  std::printf("c=256 128 B: client %llu frames in %llu sends, server %llu frames in %llu sends\n",
              static_cast<unsigned long long>(c.frames_sent),
              static_cast<unsigned long long>(c.rdma_sends),
              static_cast<unsigned long long>(s.frames_sent),
              static_cast<unsigned long long>(s.rdma_sends));
}

TEST(rdma_rpc, small_messages_go_inline) {
  rdma_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  ASSERT_TRUE(run(client.call<add>(1, 2)));
  const auto after_small = client.stats();
  EXPECT_EQ(after_small.rdma_inline_sends, after_small.rdma_sends);  // a 40-byte request
  ASSERT_TRUE(run(client.call<echo>(pattern(4096, 1))));
  const auto after_big = client.stats();
  EXPECT_EQ(after_big.rdma_inline_sends, after_small.rdma_inline_sends);  // 4 KiB: not inline
  EXPECT_GT(after_big.rdma_sends, after_small.rdma_sends);
}

TEST(rdma_rpc, inline_threshold_zero_disables_inline) {
  rdma_server srv;
  corvid::rpc_client client;
  corvid::ibv_config cfg = test_ibv();
  cfg.inline_threshold = 0;
  connect_rdma(client, srv.endpoint(), cfg);
  ASSERT_TRUE(run(client.call<add>(1, 2)));
  EXPECT_EQ(client.stats().rdma_inline_sends, 0u);
}

TEST(rdma_rpc, tcp_and_rdma_clients_on_one_server_at_once) {
  rdma_server srv;
  corvid::rpc_client rdma_client, tcp_client;
  connect_rdma(rdma_client, srv.endpoint());
  ASSERT_FALSE(corvid::sync_wait(connect(tcp_client, srv.endpoint())));
  const auto [a, b] = corvid::sync_wait([&]() -> corvid::task<std::pair<int, int>> {
    int ra = 0, rb = 0;
    for (int i = 0; i < 200; ++i) {
      auto p = co_await rdma_client.send_request<add>(i, 1);
      auto q = co_await tcp_client.send_request<add>(i, 2);
      auto x = co_await std::move(p);
      auto y = co_await std::move(q);
      if (x && *x == i + 1) ++ra;
      if (y && *y == i + 2) ++rb;
    }
    co_return std::pair{ra, rb};
  }());
  EXPECT_EQ(a, 200);
  EXPECT_EQ(b, 200);
  EXPECT_GT(rdma_client.stats().rdma_sends, 0u);
  EXPECT_EQ(tcp_client.stats().rdma_sends, 0u);
  EXPECT_EQ(srv.server().connection_count(), 2u);
}

TEST(rdma_rpc, no_device_is_a_clear_error_never_a_fallback) {
  corvid::ibv_config cfg;
  cfg.provider = "ibverbs";
  cfg.device_name = "corvid-no-such-device";
  corvid::rpc_client client;
  auto ec = client.init_ibv(cfg);
  ASSERT_TRUE(ec);
  EXPECT_EQ(ec.code(), corvid::rpc_errc::no_rdma_device) << ec.message();
  corvid::rpc_server server(server_config());
  auto sec = server.init_ibv(cfg);
  EXPECT_EQ(sec.code(), corvid::rpc_errc::no_rdma_device) << sec.message();
}

// CI installs libibverbs-dev, so the real provider must be what answers there: on a host
// without an RDMA device that is "no RDMA device found", not the stand-in compiled when
// libibverbs is missing (which would mean the provider silently was not built).
TEST(rdma_rpc, the_ibverbs_provider_answers_when_it_was_built) {
  corvid::ibv_config cfg;
  cfg.provider = "ibverbs";
  corvid::rpc_client client;
  auto ec = client.init_ibv(cfg);
  if (!ec) GTEST_SKIP() << "this host has an RDMA device";
  EXPECT_EQ(ec.code(), corvid::rpc_errc::no_rdma_device) << ec.message();
  const bool stand_in = ec.message().find("built without libibverbs") != std::string::npos;
#ifdef CORVID_HAS_IBVERBS
  EXPECT_FALSE(stand_in) << ec.message();
#else
  EXPECT_TRUE(stand_in) << ec.message();
#endif
}

TEST(rdma_rpc, a_server_without_rdma_refuses_clearly) {
  corvid::rpc_server plain(server_config());
  plain.register_handler<echo>();
  ASSERT_FALSE(plain.async_start());
  corvid::rpc_client client;
  ASSERT_FALSE(client.init_ibv(test_ibv()));
  auto ec = corvid::sync_wait(connect(client, "127.0.0.1:" + std::to_string(plain.port())));
  ASSERT_TRUE(ec);
  EXPECT_NE(ec.message().find("init_ibv"), std::string::npos) << ec.message();
  EXPECT_FALSE(client.is_connected());
}

TEST(rdma_rpc, reconnect_and_close) {
  rdma_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  ASSERT_TRUE(run(client.call<add>(1, 1)));
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));  // replaces the connection
  auto r = run(client.call<add>(2, 2));
  ASSERT_TRUE(r) << r.error().message();
  client.close();
  auto after = run(client.call<add>(3, 3));
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code(), corvid::rpc_errc::connection_closed);
  // The server notices the RDMA peer leaving through the side channel.
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (srv.server().connection_count() != 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(srv.server().connection_count(), 0u);
}

}  // namespace
}  // namespace corvid_rdma_test
