// rdma_stream on the tests' verbs provider (test_provider.hpp), two ends in one process: bytes
// arrive intact and in order at every size, big writes are cut into chunk-sized sends, small
// ones go inline, a closed peer reads as end of stream, and the pool's watermark refuses a
// stream cleanly.
#include "rdma/rdma_stream.hpp"

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include "test_provider.hpp"
#include <sys/socket.h>

namespace {

using corvid::rdma::rdma_context;
using corvid::rdma::rdma_counters;
using corvid::rdma::rdma_stream;

corvid::ibv_config stream_config() {
  corvid::ibv_config c = corvid_rdma_test::test_ibv();
  c.chunk_size = 64 * 1024;
  return c;
}

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return s;
}

struct stream_pair {
  asio::io_context io;
  rdma_counters a_counters, b_counters;
  std::shared_ptr<rdma_stream> a, b;

  explicit stream_pair(const corvid::ibv_config& cfg = stream_config()) {
    auto ctx = rdma_context::open(cfg);
    if (!ctx) throw std::runtime_error(ctx.error().message());
    auto sa = rdma_stream::create(*ctx, io, &a_counters);
    auto sb = rdma_stream::create(*ctx, io, &b_counters);
    if (!sa || !sb) throw std::runtime_error("stream creation failed");
    a = *sa;
    b = *sb;
    EXPECT_FALSE(a->connect(b->local_info(), b->max_recv_message()));
    EXPECT_FALSE(b->connect(a->local_info(), a->max_recv_message()));
  }
  ~stream_pair() {
    a->close();
    b->close();
    io.run_for(std::chrono::milliseconds(100));
  }

  // Writes `data` from a in one write, reads it all at b; returns what b read.
  std::string transfer(const std::string& data, std::uint64_t* sends) {
    std::string got;
    std::vector<char> buf(100 * 1024);
    bool wrote = false;
    std::error_code write_ec;
    std::vector<asio::const_buffer> bufs{asio::buffer(data)};
    a->async_write(bufs, sends, [&](const std::error_code& ec, std::size_t n) {
      write_ec = ec;
      EXPECT_EQ(n, data.size());
      wrote = true;
    });
    std::function<void()> read_more = [&] {
      b->async_read_some(buf.data(), buf.size(), [&](const std::error_code& ec, std::size_t n) {
        ASSERT_FALSE(ec) << ec.message();
        got.append(buf.data(), n);
        if (got.size() < data.size()) read_more();
      });
    };
    read_more();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((!wrote || got.size() < data.size()) && std::chrono::steady_clock::now() < deadline) {
      io.run_one_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(wrote);
    EXPECT_FALSE(write_ec) << write_ec.message();
    return got;
  }
};

TEST(rdma_stream, every_size_arrives_intact_in_chunk_sized_sends) {
  stream_pair p;
  for (std::size_t size :
       {std::size_t{128}, std::size_t{4096}, std::size_t{32 * 1024}, std::size_t{256 * 1024},
        std::size_t{1 << 20}, std::size_t{3 << 20} + 17}) {
    const std::string data = pattern(size, static_cast<unsigned>(size));
    std::uint64_t sends = 0;
    const std::string got = p.transfer(data, &sends);
    ASSERT_EQ(got.size(), data.size()) << size;
    EXPECT_TRUE(got == data) << "content differs at size " << size;
    EXPECT_EQ(sends, (size + 64 * 1024 - 1) / (64 * 1024)) << size;
  }
  EXPECT_EQ(p.a_counters.rdma_errors.load(), 0u);
  EXPECT_GT(p.b_counters.rdma_receives.load(), 0u);
}

TEST(rdma_stream, small_writes_go_inline) {
  stream_pair p;
  if (p.a->inline_limit() < 128) GTEST_SKIP() << "provider offers no inline sends";
  std::uint64_t sends = 0;
  EXPECT_EQ(p.transfer(pattern(128, 1), &sends), pattern(128, 1));
  EXPECT_EQ(p.a_counters.rdma_inline_sends.load(), 1u);
  EXPECT_EQ(p.transfer(pattern(4096, 2), &sends), pattern(4096, 2));
  EXPECT_EQ(p.a_counters.rdma_inline_sends.load(), 1u);  // over the threshold: not inline
  EXPECT_EQ(p.a_counters.rdma_sends.load(), 2u);
}

TEST(rdma_stream, a_closed_peer_reads_as_end_of_stream_after_its_data) {
  stream_pair p;
  // Side channels: a connected socket pair stands in for the handshake's TCP connection.
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const asio::generic::stream_protocol unix_stream(AF_UNIX, 0);
  asio::generic::stream_protocol::socket sa(p.io, unix_stream, fds[0]);
  asio::generic::stream_protocol::socket sb(p.io, unix_stream, fds[1]);
  p.a->attach_side_channel(std::move(sa));
  p.b->attach_side_channel(std::move(sb));
  const std::string data = pattern(200 * 1024, 9);
  std::uint64_t sends = 0;
  std::vector<asio::const_buffer> bufs{asio::buffer(data)};
  // Closed once the write completes (all posted, as the connections do): it lingers until
  // the sends are acknowledged, then closes the side channel.
  p.a->async_write(bufs, &sends, [&](const std::error_code&, std::size_t) { p.a->close(); });
  std::string got;
  std::vector<char> buf(64 * 1024);
  std::error_code end;
  std::function<void()> read_more = [&] {
    p.b->async_read_some(buf.data(), buf.size(), [&](const std::error_code& ec, std::size_t n) {
      if (ec) {
        end = ec;
        return;
      }
      got.append(buf.data(), n);
      read_more();
    });
  };
  read_more();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!end && std::chrono::steady_clock::now() < deadline)
    p.io.run_one_for(std::chrono::milliseconds(100));
  EXPECT_EQ(end, asio::error::eof) << end.message();
  EXPECT_TRUE(got == data) << got.size();
}

// After a setup over TLS the side channel is the bare socket: the peer's close_notify (a
// record, where a plain side channel expects nothing) is its leaving, as its FIN would be.
TEST(rdma_stream, bytes_on_a_side_channel_after_tls_read_as_closed_on_a_plain_one_as_an_error) {
  for (const bool was_tls : {true, false}) {
    stream_pair p;
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    const asio::generic::stream_protocol unix_stream(AF_UNIX, 0);
    asio::generic::stream_protocol::socket mine(p.io, unix_stream, fds[0]);
    p.b->attach_side_channel(asio::generic::stream_protocol::socket(p.io, unix_stream, fds[1]),
                             was_tls);
    const unsigned char close_notify[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x01, 0x00};
    ASSERT_EQ(asio::write(mine, asio::buffer(close_notify)), sizeof close_notify);
    std::error_code end;
    char c = 0;
    p.b->async_read_some(&c, 1, [&](const std::error_code& ec, std::size_t) { end = ec; });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!end && std::chrono::steady_clock::now() < deadline)
      p.io.run_one_for(std::chrono::milliseconds(100));
    if (was_tls) {
      EXPECT_EQ(end, asio::error::eof) << end.message();
    } else {
      EXPECT_TRUE(end && end != asio::error::eof) << end.message();
    }
  }
}

TEST(rdma_stream, the_pool_watermark_refuses_a_stream_cleanly) {
  corvid::ibv_config cfg = stream_config();
  cfg.pool_watermark = 15 * cfg.chunk_size;  // one stream needs 10 chunks
  auto ctx = rdma_context::open(cfg);
  ASSERT_TRUE(ctx) << ctx.error().message();
  asio::io_context io;
  rdma_counters counters;
  auto first = rdma_stream::create(*ctx, io, &counters);
  ASSERT_TRUE(first);
  auto second = rdma_stream::create(*ctx, io, &counters);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), corvid::rpc_errc::server_busy);
  EXPECT_NE(second.error().message().find("watermark"), std::string::npos)
      << second.error().message();
  (*first)->close();
  io.run_for(std::chrono::milliseconds(50));
  first->reset();
  auto third = rdma_stream::create(*ctx, io, &counters);  // the chunks came back
  EXPECT_TRUE(third);
  if (third) (*third)->close();
  io.run_for(std::chrono::milliseconds(50));
}

TEST(rdma_stream, no_device_is_a_clear_error) {
  corvid::ibv_config cfg;
  cfg.provider = "ibverbs";
  cfg.device_name = "corvid-no-such-device";
  auto ctx = rdma_context::open(cfg);
  ASSERT_FALSE(ctx);
  EXPECT_EQ(ctx.error().code(), corvid::rpc_errc::no_rdma_device) << ctx.error().message();
}

}  // namespace

// A connection's read and write handlers hold the connection, which holds its stream, and the
// stream keeps them until they complete. A reactor stopped and destroyed with those
// operations pending (a pool torn down at exit with a client still open) must drop them as
// it drops a socket's, or the pair keeps itself — and its registered chunks — alive.
TEST(rdma_stream, a_destroyed_reactor_drops_pending_handlers_and_frees_the_stream) {
  auto ctx = rdma_context::open(stream_config());
  ASSERT_TRUE(ctx) << ctx.error().message();
  std::weak_ptr<rdma_stream> weak_a, weak_b;
  std::vector<char> buf(1024);
  {
    auto io = std::make_unique<asio::io_context>();
    rdma_counters a_counters, b_counters;
    auto sa = rdma_stream::create(*ctx, *io, &a_counters);
    auto sb = rdma_stream::create(*ctx, *io, &b_counters);
    ASSERT_TRUE(sa && sb);
    std::shared_ptr<rdma_stream> a = std::move(*sa), b = std::move(*sb);
    ASSERT_FALSE(a->connect(b->local_info(), b->max_recv_message()));
    ASSERT_FALSE(b->connect(a->local_info(), a->max_recv_message()));
    weak_a = a;
    weak_b = b;
    // Each handler owns its stream, as a connection's handler owns its connection.
    a->async_read_some(buf.data(), buf.size(), [a](const std::error_code&, std::size_t) {});
    b->async_read_some(buf.data(), buf.size(), [b](const std::error_code&, std::size_t) {});
    // A write held back by a closed window would do the same; close() posts its teardown,
    // which a stopped reactor never runs.
    a->close();
    a.reset();
    b.reset();
    io->stop();
    io.reset();
  }
  EXPECT_TRUE(weak_a.expired());
  EXPECT_TRUE(weak_b.expired());
  EXPECT_EQ((*ctx)->pool().stats().in_use, 0u);
}
