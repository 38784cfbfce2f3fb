// Per-message zstd end to end (docs/protocol.md, "Compression"): a client that enables it gets
// plain values from compressed replies and stream items, and sends compressed requests and
// items once the server has said it accepts them, over TCP, a Unix socket, TLS and RDMA
// (softverbs); a client that does not enable it is never sent a compressed frame. Then the
// receiver's side against crafted frames: a payload that lies about its size, or declares
// more than the limits allow, is refused with a clear error before anything is allocated,
// and the connection goes on.
#include <future>
#include <memory>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "../support/stream_handlers.hpp"
#include "background_quiet.hpp"  // its pool's background work ends before the process does
#include "compressible_text.hpp"
#include "protocol/compression.hpp"
#include "protocol/frames.hpp"
#include "raw_server.hpp"
#include "server_test_support.hpp"
#include "test_certs.hpp"
#include "test_provider.hpp"

namespace {

// Echoes its argument, and the request's attachment as the reply's.
std::string mirror(corvid::request_context& ctx, std::string s) {
  ctx.set_response_attachment(std::string(ctx.request_attachment()));
  return s;
}

// Its argument, the caller's tenant and whether the call was traced; the reply carries
// metadata of its own.
std::string tagged(corvid::request_context& ctx, std::string s) {
  ctx.response_metadata().add("served-by", "a1");
  return s + ":" + std::string(ctx.metadata().find("tenant").value_or("-")) + ":" +
         (ctx.trace() != nullptr ? "traced" : "untraced");
}

// Its argument's size: a view, so decoding it allocates nothing (and charges nothing).
std::uint64_t measure(std::string_view s) { return s.size(); }

using corvid::test::json_like;

}  // namespace

namespace corvid_server_test {
namespace {

using corvid::rpc_errc;
using corvid::test::test_certs;

enum class transport { tcp, uds, tls, rdma };

const test_certs& certs() {
  static const test_certs c;
  return c;
}

class Compression : public ::testing::TestWithParam<transport> {
 protected:
  void SetUp() override {
    corvid::server_config c = loopback_config();
    if (GetParam() == transport::uds) {
      path_ = "/tmp/corvid-zstd-" + std::to_string(::getpid()) + ".sock";
      c.address = "unix:" + path_;
    }
    server_ = std::make_unique<corvid::rpc_server>(c);
    server_->register_handler<mirror, tagged>();
    corvid_test::streams::register_all(*server_);
    if (GetParam() == transport::rdma) {
      ASSERT_FALSE(server_->init_ibv(corvid_rdma_test::test_ibv()));
    }
    if (GetParam() == transport::tls) {
      ASSERT_FALSE(server_->init_tls(
          {.certificate_chain_file = certs().server_cert, .private_key_file = certs().server_key}));
    }
    ASSERT_FALSE(server_->async_start());
  }

  std::unique_ptr<corvid::rpc_client> client(bool compress) {
    corvid::client_config cfg;
    cfg.compression.enabled = compress;
    auto c = std::make_unique<corvid::rpc_client>(cfg);
    std::string ep = "127.0.0.1:" + std::to_string(server_->port());
    if (GetParam() == transport::uds) ep = "unix:" + path_;
    if (GetParam() == transport::tls) {
      EXPECT_FALSE(c->init_tls({.ca_file = certs().ca}));
      ep = "localhost:" + std::to_string(server_->port());
    }
    if (GetParam() == transport::rdma) {
      EXPECT_FALSE(c->init_ibv(corvid_rdma_test::test_ibv()));
    }
    auto ec = corvid::sync_wait(corvid::test::connect(*c, ep));
    EXPECT_FALSE(ec) << ec.message();
    return c;
  }

  // A call of `body` and `attachment` bytes (JSON-like): checks what comes back, and returns
  // the bytes the client sent and received for it.
  std::pair<std::uint64_t, std::uint64_t> mirrored(corvid::rpc_client& c, std::size_t body,
                                                   std::size_t attachment) {
    const std::string b = json_like(body), a = json_like(attachment);
    const auto before = c.stats();
    auto r = corvid::sync_wait(
        [&]() -> corvid::task<
                  corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>> {
          co_return co_await c.call_with<mirror>({.attachment = a}, b);
        }());
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    if (r) {
      EXPECT_EQ(r->value, b);
      EXPECT_EQ(r->attachment, a);
    }
    const auto after = c.stats();
    return {after.bytes_sent - before.bytes_sent, after.bytes_received - before.bytes_received};
  }

  std::string path_;
  std::unique_ptr<corvid::rpc_server> server_;
};

TEST_P(Compression, BigCallsGoCompressedBothWaysAndArriveWhole) {
  auto c = client(true);
  mirrored(*c, 10, 0);  // the first reply says the server accepts compression
  const auto [sent, received] = mirrored(*c, 48 * 1024, 16 * 1024);
  EXPECT_LT(sent, 64u * 1024 / 4);
  EXPECT_LT(received, 64u * 1024 / 4);
  // Small calls stay as they are, and still arrive.
  mirrored(*c, 100, 100);
}

// The trace context and both metadata blocks are inside the compressed bytes, read after
// inflating as in any frame.
TEST_P(Compression, MetadataAndTraceTravelInsideTheCompressedBytes) {
  auto c = client(true);
  mirrored(*c, 10, 0);
  const std::string text = json_like(32 * 1024);
  const corvid::metadata md{{"tenant", "acme"}};
  corvid::metadata got;
  const corvid::trace_context trace = corvid::trace_context::new_trace();
  corvid::call_options o;
  o.metadata = &md;
  o.reply_metadata = &got;
  o.trace = &trace;
  const auto before = c->stats();
  auto r = corvid::sync_wait(
      [&]() -> corvid::task<
                corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>> {
        co_return co_await c->call_with<tagged>(o, text);
      }());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->value, text + ":acme:traced");
  EXPECT_EQ(got, (corvid::metadata{{"served-by", "a1"}}));
  const auto after = c->stats();
  EXPECT_LT(after.bytes_sent - before.bytes_sent, text.size() / 4);
  EXPECT_LT(after.bytes_received - before.bytes_received, text.size() / 4);
}

TEST_P(Compression, AClientThatDoesNotAskIsNeverSentACompressedFrame) {
  auto c = client(false);
  mirrored(*c, 10, 0);
  const auto [sent, received] = mirrored(*c, 48 * 1024, 16 * 1024);
  EXPECT_GT(sent, 64u * 1024);
  EXPECT_GT(received, 64u * 1024);
}

TEST_P(Compression, StreamItemsGoCompressedBothWays) {
  auto c = client(true);
  mirrored(*c, 10, 0);
  const auto before = c->stats();
  // The server's items: 40 KiB each, of one letter.
  auto items = corvid::sync_wait([&]() -> corvid::task<std::vector<std::string>> {
    std::vector<std::string> got;
    auto s = co_await c->stream<corvid_test::streams::blobs>(40u * 1024, 4u);
    if (!s) co_return got;
    while (auto item = co_await s->next()) got.push_back(std::move(*item));
    EXPECT_FALSE(s->error());
    co_return got;
  }());
  ASSERT_EQ(items.size(), 4u);
  for (std::size_t i = 0; i < items.size(); ++i)
    EXPECT_EQ(items[i], std::string(40 * 1024, static_cast<char>('a' + i)));
  // The client's items, answered one by one.
  auto replies = corvid::sync_wait([&]() -> corvid::task<std::vector<std::string>> {
    std::vector<std::string> got;
    auto s = co_await c->open_stream<corvid_test::streams::chat>();
    if (!s) co_return got;
    for (int i = 0; i < 3; ++i) {
      EXPECT_FALSE(co_await s->write(json_like(30 * 1024)));
      if (auto r = co_await s->next()) got.push_back(std::move(*r));
    }
    s->close_writes();
    while (auto r = co_await s->next()) got.push_back(std::move(*r));
    EXPECT_FALSE(s->error());
    co_return got;
  }());
  ASSERT_EQ(replies.size(), 3u);
  for (const auto& r : replies) EXPECT_EQ(r, "re: " + json_like(30 * 1024));
  const auto after = c->stats();
  // 160 KiB of items down and 2 x 90 KiB of text up and back, in far fewer bytes.
  EXPECT_LT(after.bytes_received - before.bytes_received, 100u * 1024);
  EXPECT_LT(after.bytes_sent - before.bytes_sent, 40u * 1024);
}

INSTANTIATE_TEST_SUITE_P(Transports, Compression,
                         ::testing::Values(transport::tcp, transport::uds, transport::tls,
                                           transport::rdma),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case transport::tcp:
                               return "tcp";
                             case transport::uds:
                               return "uds";
                             case transport::tls:
                               return "tls";
                             default:
                               return "rdma";
                           }
                         });

// A method's own compression (method_policy::compress) and a call's (call_options::compress),
// on a plain client and through a client_pool.
TEST(CompressionSettings, AMethodOrACallMaySayNo) {
  corvid::rpc_server server(loopback_config());
  server.register_handler<mirror, measure>();
  ASSERT_FALSE(server.async_start());
  corvid::client_config cfg;
  cfg.compression.enabled = true;
  cfg.methods.set<&mirror>({.compress = false});
  corvid::rpc_client c(cfg);
  ASSERT_FALSE(corvid::sync_wait(c.connect(endpoint(server))));
  ASSERT_TRUE(corvid::sync_wait(c.call<measure>(std::string_view("negotiate"))));
  const std::string text = json_like(64 * 1024);
  // Bytes the client sends for one call made by `make`.
  auto sent_for = [&](auto make) {
    const auto before = c.stats().bytes_sent;
    auto r = corvid::sync_wait(make());
    EXPECT_TRUE(r) << r.error().message();
    return c.stats().bytes_sent - before;
  };
  corvid::call_options yes, no;
  yes.compress = true;
  no.compress = false;
  using with_att = corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>;
  using size_result = corvid::expected<corvid::with_attachment<std::uint64_t>, corvid::rpc_error>;
  // mirror's entry says no; measure has none: compressed.
  EXPECT_GT(sent_for([&] { return c.call<mirror>(text); }), text.size());
  EXPECT_LT(sent_for([&] { return c.call<measure>(std::string_view(text)); }), text.size() / 4);
  // The call's own word wins over its method's, either way.
  EXPECT_LT(sent_for([&]() -> corvid::task<with_att> {
              co_return co_await c.call_with<mirror>(yes, text);
            }),
            text.size() / 4);
  EXPECT_GT(sent_for([&]() -> corvid::task<size_result> {
              co_return co_await c.call_with<measure>(no, std::string_view(text));
            }),
            text.size());
  // A pool's calls follow its client's settings.
  corvid::pool_config pc;
  pc.client = cfg;
  auto pool = corvid::client_pool::create(endpoint(server), pc);
  auto r = corvid::sync_wait([&]() -> corvid::task<bool> {
    auto a = co_await pool->call<measure>(std::string_view("negotiate"));
    auto b = co_await pool->call<mirror>(text);
    auto d = co_await pool->call_with<mirror>(yes, text);
    co_return a&& b&&* b == text&& d && d->value == text;
  }());
  EXPECT_TRUE(r);
}

// ---- the receiver against crafted frames

// A compressed request for F (`mirror` by default): `plain` deflated, its head then declaring
// `declared`.
template <auto F = mirror>
std::string compressed_request(std::uint64_t id, const std::string& plain, std::uint32_t declared) {
  std::string body;
  corvid::codec::string_sink sink{body};
  corvid::codec::encode(sink, plain);
  std::string frame(corvid::protocol::header_size, '\0');
  EXPECT_TRUE(corvid::protocol::deflate(body, {}, 1, frame));
  for (int i = 0; i < 4; ++i) {
    frame[corvid::protocol::header_size + i] = static_cast<char>(declared >> (8 * i));
  }
  corvid::protocol::frame_header h;
  h.type = corvid::protocol::msg_type::request;
  h.flags = corvid::protocol::flag_compressed;
  h.request_id = id;
  h.function_id = corvid::protocol::function_id<F>();
  h.body_length = static_cast<std::uint32_t>(frame.size() - corvid::protocol::header_size);
  corvid::protocol::encode_header(h, frame.data());
  return frame;
}

std::uint32_t encoded_size(const std::string& s) {
  return static_cast<std::uint32_t>(corvid::codec::encoded_size(s));
}

class CompressedRequests : public ::testing::Test {
 protected:
  void start(corvid::server_config c) {
    server_ = std::make_unique<corvid::rpc_server>(c);
    server_->register_handler<mirror, measure>();
    ASSERT_FALSE(server_->async_start());
  }
  // The connection still serves a plain call after a refusal.
  void still_serves(corvid::test::raw_connection& raw) {
    raw.send_request<mirror>(99, 0, std::string("after"));
    auto f = raw.read_frame();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->header.request_id, 99u);
    EXPECT_EQ(f->header.status, rpc_errc::ok);
  }
  std::unique_ptr<corvid::rpc_server> server_;
};

TEST_F(CompressedRequests, AnHonestOneIsServed) {
  start(loopback_config());
  corvid::test::raw_connection raw(server_->port());
  const std::string text = json_like(20000);
  raw.send(compressed_request(1, text, encoded_size(text)));
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.status, rpc_errc::ok) << f->message();
  std::string got;
  ASSERT_EQ(corvid::codec::decode(f->body, got), corvid::codec::decode_errc::ok);
  EXPECT_EQ(got, text);
}

TEST_F(CompressedRequests, OneThatInflatesPastItsDeclaredSizeIsRefused) {
  start(loopback_config());
  corvid::test::raw_connection raw(server_->port());
  raw.send(compressed_request(1, std::string(4 << 20, 'z'), 1000));  // 4 MiB declared as 1000
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.status, rpc_errc::bad_request);
  EXPECT_EQ(f->message(), "a compressed payload inflates to more than its declared 1000 bytes");
  still_serves(raw);
}

TEST_F(CompressedRequests, OneThatDeclaresMoreThanTheFrameLimitIsRefusedFromItsHead) {
  corvid::server_config c = loopback_config();
  c.max_frame_size = 1 << 20;
  start(c);
  corvid::test::raw_connection raw(server_->port());
  const std::string text(2 << 20, 'z');  // 2 MiB, honestly declared: over the limit
  raw.send(compressed_request(1, text, encoded_size(text)));
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.status, rpc_errc::message_too_large);
  EXPECT_NE(f->message().find("over max_frame_size 1048576"), std::string::npos) << f->message();
  still_serves(raw);
}

// The declared size is charged to the connection's call memory before anything is inflated:
// a connection allowed 256 KiB cannot make the server inflate 1 MiB, honest or not (measure
// takes a view: nothing else would charge or refuse it). 200 KiB fits.
TEST_F(CompressedRequests, TheDeclaredSizeIsChargedBeforeInflating) {
  corvid::server_config c = loopback_config();
  c.max_call_bytes_per_connection = 256 << 10;
  c.busy_at_memory_limit = true;
  start(c);
  corvid::test::raw_connection raw(server_->port());
  const std::string big(1 << 20, 'z'), fits(200 << 10, 'z');
  raw.send(compressed_request<measure>(1, big, encoded_size(big)));
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.status, rpc_errc::server_busy) << f->message();
  EXPECT_EQ(f->message(), "no memory to inflate a compressed request of 1048579 bytes");
  raw.send(compressed_request<measure>(2, fits, encoded_size(fits)));
  f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.status, rpc_errc::ok) << f->message();
  still_serves(raw);
}

TEST_F(CompressedRequests, GarbageIsRefused) {
  start(loopback_config());
  corvid::test::raw_connection raw(server_->port());
  std::string frame = compressed_request(1, json_like(5000), encoded_size(json_like(5000)));
  for (std::size_t i = corvid::protocol::header_size + 12; i < frame.size(); ++i) frame[i] ^= 0x5a;
  raw.send(frame);
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.status, rpc_errc::bad_request);
  still_serves(raw);
}

// The client's side: a reply that lies about its size ends that call alone.
TEST(CompressedReplies, OneThatLiesEndsItsCallWithProtocolError) {
  corvid::test::raw_server fake;
  corvid::client_config cfg;
  cfg.compression.enabled = true;
  corvid::rpc_client c(cfg);
  auto connected = std::async(std::launch::async, [&] { fake.accept(); });
  ASSERT_FALSE(corvid::sync_wait(c.connect(fake.endpoint())));
  connected.get();
  // The fake server answers the call with 1 MiB of a string value, declared as 64 bytes.
  std::uint8_t request_flags = 0;
  auto answered = std::async(std::launch::async, [&] {
    const std::string req = fake.read_frame();
    corvid::protocol::frame_header rh;
    if (req.size() < corvid::protocol::header_size ||
        corvid::protocol::decode_header(req.data(), rh, UINT32_MAX) !=
            corvid::protocol::header_errc::ok)
      return;
    request_flags = rh.flags;
    std::string body;
    corvid::codec::string_sink sink{body};
    corvid::codec::encode(sink, std::string(1 << 20, 'z'));
    std::string frame(corvid::protocol::header_size, '\0');
    if (!corvid::protocol::deflate(body, {}, 1, frame)) return;
    frame[corvid::protocol::header_size] = 64;
    for (int i = 1; i < 4; ++i) frame[corvid::protocol::header_size + i] = 0;
    corvid::protocol::frame_header h = corvid::protocol::make_response(
        rh.request_id, static_cast<std::uint32_t>(frame.size() - corvid::protocol::header_size), 0);
    h.flags = corvid::protocol::flag_compressed;
    corvid::protocol::encode_header(h, frame.data());
    fake.send(frame);
  });
  auto r = corvid::sync_wait(c.call<mirror>(std::string("x")));
  answered.get();
  EXPECT_EQ(request_flags & corvid::protocol::flag_accepts_compressed,
            corvid::protocol::flag_accepts_compressed);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), rpc_errc::protocol_error);
  EXPECT_NE(r.error().message().find("inflates to more than its declared 64 bytes"),
            std::string::npos)
      << r.error().message();
  EXPECT_TRUE(c.is_connected());  // the connection goes on
}

}  // namespace
}  // namespace corvid_server_test
