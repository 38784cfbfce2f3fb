// An RDMA server's metrics (softverbs unless CORVID_TEST_VERBS_PROVIDER says otherwise): the
// connection counted as rdma, the chunk pool's registered memory and chunks.
#include <string>

#include "rdma_support.hpp"

namespace corvid_rdma_test {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(rdma_metrics, connection_transport_and_chunk_pool) {
  rdma_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  auto r = corvid::sync_wait([&]() -> corvid::task<int> {
    co_return (co_await client.call<add>(2, 3)).value_or(-1);
  }());
  EXPECT_EQ(r, 5);
  const std::string t = srv.server().metrics_text();
  EXPECT_TRUE(has_line(t, "corvid_server_connections{transport=\"rdma\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "corvid_server_connections{transport=\"tcp\"} 0")) << t;
  EXPECT_NE(t.find("\ncorvid_server_rdma_chunks{state=\"in_use\"} "), std::string::npos) << t;
  EXPECT_EQ(t.find("\ncorvid_server_rdma_chunks{state=\"in_use\"} 0\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("\ncorvid_server_rdma_registered_bytes 0\n"), std::string::npos) << t;
  EXPECT_NE(t.find("\ncorvid_server_rdma_registered_limit_bytes "), std::string::npos) << t;
}

}  // namespace
}  // namespace corvid_rdma_test
