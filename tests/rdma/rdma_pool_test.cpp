// The registered-memory pool end to end: the chunks a closed connection gave back are
// deregistered once idle even though nothing uses the pool again (a timer on the reactor
// trims it; before, only the pool's next acquire or release did).
#include <chrono>

#include "rdma/rdma_context.hpp"
#include "rdma_support.hpp"

namespace corvid_rdma_test {
namespace {

TEST(rdma_pool, a_closed_connections_chunks_are_released_once_idle) {
  corvid::ibv_config cfg = test_ibv();
  cfg.chunk_size = 64 * 1024;
  cfg.idle_chunk_release = 300ms;  // also makes this pool the test's own (the pool key)
  // The pool the server and the client share; holding it keeps it (and its cache) alive.
  auto ctx = corvid::rdma::rdma_context::open(cfg);
  ASSERT_TRUE(ctx) << ctx.error().message();
  corvid::rdma::chunk_pool& pool = (*ctx)->pool();
  const std::size_t floor = pool.stats().registered_bytes;  // nothing is held yet
  const std::size_t per_connection = (cfg.recv_buffers + cfg.send_window) * cfg.chunk_size;

  rdma_server srv(cfg);
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint(), cfg);
  ASSERT_TRUE(run(client.call<echo>("hello")));
  EXPECT_EQ(pool.stats().registered_bytes, floor + 2 * per_connection);  // both ends
  client.close();

  // Both ends give their chunks back (the server once the side channel closes), and then no
  // one touches the pool: only the idle trim can deregister them.
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (pool.stats().in_use != 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(pool.stats().in_use, 0u) << "the connection's chunks never came back";
  while (pool.stats().registered_bytes != floor && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  const auto st = pool.stats();
  EXPECT_EQ(st.registered_bytes, floor) << "idle chunks stayed registered";
  EXPECT_EQ(st.cached, 0u);
  EXPECT_EQ(st.releases, st.registrations);
  EXPECT_EQ(srv.server().stats().rdma_errors, 0u);
}

}  // namespace
}  // namespace corvid_rdma_test
