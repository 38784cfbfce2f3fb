// Streams over RDMA (softverbs here; the kernel's Soft-RoCE in the QEMU stage): the three
// modes, flow control across many windows, and a cancel.
#include <gtest/gtest.h>

#include "rdma_support.hpp"
#include "stream_handlers.hpp"

namespace corvid_rdma_test {
namespace {

using namespace corvid_test::streams;

class rdma_stream_server {
 public:
  rdma_stream_server() : server_(server_config()) {
    register_all(server_);
    if (auto ec = server_.init_ibv(test_ibv())) throw std::runtime_error(ec.message());
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }

 private:
  corvid::rpc_server server_;
};

TEST(rdma_streams, server_client_and_bidirectional_streams) {
  rdma_stream_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  auto [got, err] = corvid::sync_wait(read_count(client, 20'000));
  EXPECT_FALSE(err) << err.message();
  ASSERT_EQ(got.size(), 20'000u);
  EXPECT_EQ(got.back(), 20'000);
  auto up = corvid::sync_wait(write_upload(client, 500, 4096));  // 2 MB: several windows
  ASSERT_TRUE(up) << up.error().message();
  EXPECT_EQ(*up, 500u * 4096u);
  auto [answers, chat_err] = corvid::sync_wait(talk(client, {"x", "y"}));
  EXPECT_FALSE(chat_err) << chat_err.message();
  EXPECT_EQ(answers, (std::vector<std::string>{"re: x", "re: y"}));
}

TEST(rdma_streams, large_items_and_a_cancel) {
  rdma_stream_server srv;
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint());
  auto run = [&]() -> corvid::task<std::pair<std::size_t, corvid::rpc_error>> {
    auto s = co_await client.stream<blobs>(256u << 10, 16u);
    std::size_t total = 0;
    while (auto b = co_await s->next()) total += b->size();
    auto e = co_await client.stream<endless>(1000u);
    for (int i = 0; i < 5; ++i) co_await e->next();
    e->cancel();
    while (co_await e->next()) {
    }
    co_return std::pair{total, e->error()};
  };
  auto [total, err] = corvid::sync_wait(run());
  EXPECT_EQ(total, 16u * (256u << 10));
  EXPECT_EQ(err.code(), corvid::rpc_errc::cancelled) << err.message();
  // The connection still serves plain calls.
  auto [got, count_err] = corvid::sync_wait(read_count(client, 3));
  EXPECT_FALSE(count_err) << count_err.message();
  EXPECT_EQ(got.size(), 3u);
}

}  // namespace
}  // namespace corvid_rdma_test
