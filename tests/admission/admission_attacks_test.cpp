// The rule admission enforces, against the classes of peer that broke it once each: what a
// peer makes the server hold is charged before it is held, and a shared resource gives each
// connection (or peer address) a bounded share, so a second, well-behaved peer is served.
// Time bounds here are coarse: they mean "it hung", never "it was fast".
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "attacks.hpp"
#include "connect.hpp"
#include "eventually.hpp"
#include "slowdown.hpp"
#include "test_certs.hpp"
#include "worker_queue_depth.hpp"

namespace {

using namespace std::chrono_literals;
using corvid::test::eventually;
using corvid::test::patience;
using corvid::test::worker_queue_depth;

// ---- class 4: one connection filling the worker queue everyone shares

std::atomic<bool> gate_open{false};
std::atomic<int> gated_runs{0};
// Blocks its worker until the gate opens (deaf to cancellation; bounded so a failing test ends).
int gated(int x) {
  ++gated_runs;
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (!gate_open && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  return x;
}
int quick_blocking(int x) { return x + 1; }
using reply_t = corvid::async_reply<corvid::detail::call_state<int, false>>;

corvid::expected<int, corvid::rpc_error> await_reply(reply_t reply) {
  return corvid::sync_wait([](reply_t r) -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await std::move(r);
  }(std::move(reply)));
}

TEST(admission_attacks, one_connection_cannot_fill_the_worker_queue) {
  gate_open = false;
  gated_runs = 0;
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 2;
  cfg.worker_threads = 1;
  cfg.worker_queue_length = 64;  // a share of 8 per connection
  corvid::rpc_server server(cfg);
  server.register_blocking_handler<gated, quick_blocking>();
  ASSERT_FALSE(server.async_start());
  const std::string ep = "127.0.0.1:" + std::to_string(server.port());

  corvid::rpc_client attacker;
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(attacker, ep)));
  constexpr int flood = 64;
  std::vector<reply_t> replies;
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (int i = 0; i < flood; ++i) replies.push_back(co_await attacker.send_request<gated>(i));
  }());
  // The flood has been taken in: either it filled the queue (63 waiting behind the one
  // running), or its connection stopped at its share.
  ASSERT_TRUE(eventually(
      [&] {
        return worker_queue_depth(server) >= flood - 1 || server.stats().admission_pauses > 0;
      },
      patience(10s)));
  EXPECT_LE(worker_queue_depth(server), 8u);

  // Another client's blocking call is queued, not refused.
  corvid::rpc_client good;
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(good, ep)));
  auto pending = corvid::sync_wait([&]() -> corvid::task<reply_t> {
    co_return co_await good.send_request<quick_blocking>(41);
  }());
  ASSERT_TRUE(eventually([&] { return worker_queue_depth(server) >= 8; }, patience(10s)) ||
              pending.ready());
  gate_open = true;
  auto r = await_reply(std::move(pending));
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(*r, 42);
  // The flood was paused, not refused: every one of its calls ends with its value.
  for (int i = 0; i < flood; ++i) {
    auto v = await_reply(std::move(replies[static_cast<std::size_t>(i)]));
    ASSERT_TRUE(v.has_value()) << i << ": " << v.error().message();
    EXPECT_EQ(*v, i);
  }
}

// ---- class 1: a stream producer's item held while its client grants no credit

std::atomic<int> live_items{0};
std::atomic<int> producers_ended{0};
constexpr std::uint32_t item_bytes = 256 * 1024;
corvid::stream<std::string> big_items() {
  struct on_end {
    ~on_end() { ++producers_ended; }
  } ended;
  for (;;) {
    struct live {
      live() { ++live_items; }
      ~live() { --live_items; }
    } counted;
    co_yield std::string(item_bytes, 'x');
  }
}
std::string echo(std::string s) { return s; }

TEST(admission_attacks, parked_stream_producers_are_charged_for_their_items) {
  live_items = 0;
  producers_ended = 0;
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 2;
  cfg.max_memory = corvid::memory_limit::bytes(8u << 20);
  corvid::rpc_server server(cfg);
  server.register_handler<big_items, echo>();
  ASSERT_FALSE(server.async_start());
  const std::string ep = "127.0.0.1:" + std::to_string(server.port());

  // Far more streams than the memory could hold items for; the client reads none of them,
  // so after its first item each producer waits at its next co_yield.
  constexpr int streams = 96;
  corvid::rpc_client attacker;
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(attacker, ep)));
  std::vector<corvid::stream_reader<std::string>> readers;
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (int i = 0; i < streams; ++i) {
      auto s = co_await attacker.stream<big_items>();
      if (s) readers.push_back(std::move(*s));
    }
  }());
  ASSERT_EQ(readers.size(), static_cast<std::size_t>(streams));

  auto charged = [&] {
    const auto m = server.memory();
    const corvid::memory_usage* f = m.find("in_flight");
    return f == nullptr ? std::size_t{0} : f->current;
  };
  auto held = [&] {
    return static_cast<std::size_t>(std::max(0, live_items.load())) * item_bytes;
  };
  // Settled: the items held exceed what the server may hold at all (uncharged), or the
  // memory ran out and streams were ended for it, with every held item charged.
  ASSERT_TRUE(eventually(
      [&] { return held() > (8u << 20) || (producers_ended > 0 && charged() >= held()); },
      patience(10s)))
      << "held " << held() << ", charged " << charged();
  EXPECT_TRUE(eventually([&] { return charged() >= held(); }, patience(5s)))
      << "items held " << held() << " bytes, charged " << charged();
  EXPECT_LE(held(), 8u << 20);

  // A second, well-behaved peer is served meanwhile.
  corvid::rpc_client good;
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(good, ep)));
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await good.call_for<echo>(patience(5s), std::string("still here"));
      }());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(*r, "still here");
}

// An item bigger than the memory the server has, on a connection with nothing queued: it
// used to be queued anyway ("an item always fits an empty queue"), past the limit.
corvid::stream<std::string> one_blob(std::uint32_t size) { co_yield std::string(size, 'z'); }

TEST(admission_attacks, a_stream_item_is_never_queued_past_the_memory_limit) {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 1;
  cfg.max_memory = corvid::memory_limit::bytes(8u << 20);
  corvid::rpc_server server(cfg);
  server.register_handler<one_blob, echo>();
  ASSERT_FALSE(server.async_start());
  const std::string ep = "127.0.0.1:" + std::to_string(server.port());
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, ep)));
  server.reset_memory_peak();
  auto got = corvid::sync_wait([&]() -> corvid::task<std::string> {
    auto s = co_await client.stream<one_blob>(12u << 20);
    if (!s) co_return "open failed: " + s.error().message();
    auto item = co_await s->next();
    if (item) co_return "an item of " + std::to_string(item->size()) + " bytes arrived";
    co_return s->error().message();
  }());
  EXPECT_NE(got.find("the server is at its memory limit"), std::string::npos) << got;
  EXPECT_LE(server.memory().peak, std::size_t{8u << 20}) << server.memory().to_string();
  // The connection goes on serving.
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call_for<echo>(patience(5s), std::string("after"));
      }());
  ASSERT_TRUE(r.has_value()) << r.error().message();
}

// ---- class 2: pre-authentication state (TLS handshakes) from a crowd of cheap connections

const corvid::test::test_certs& certs() {
  static const corvid::test::test_certs c;
  return c;
}

// A TLS record header announcing a ClientHello, and one byte of it: the server starts its
// handshake and waits for the rest, which never comes.
constexpr std::string_view partial_client_hello("\x16\x03\x01\x02\x00\x01", 6);

TEST(admission_attacks, tls_handshakes_cannot_take_what_established_clients_need) {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 2;
  cfg.max_memory = corvid::memory_limit::bytes(16u << 20);
  corvid::rpc_server server(cfg);
  server.register_handler<echo>();
  corvid::tls_config tls{.certificate_chain_file = certs().server_cert,
                         .private_key_file = certs().server_key};
  tls.handshake_timeout = 60s;  // the attack outlives the test unless admission ends it
  ASSERT_FALSE(server.init_tls(std::move(tls)));
  ASSERT_FALSE(server.async_start());
  const std::string ep = "localhost:" + std::to_string(server.port());

  corvid::rpc_client established;
  ASSERT_FALSE(established.init_tls({.ca_file = certs().ca}));
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(established, ep)));

  constexpr int crowd = 400;
  std::vector<corvid_attack::raw_socket> attack;
  for (int i = 0; i < crowd; ++i) {
    attack.emplace_back(server.port());
    if (attack.back().ok()) attack.back().send(partial_client_hello);
  }
  const std::size_t limit = 16u << 20;
  // Taken in: the handshakes filled the server, or all but a share were refused.
  ASSERT_TRUE(eventually(
      [&] {
        return server.memory().current + limit / 16 >= limit ||
               server.stats().pre_auth_refusals >= crowd - 64;
      },
      patience(15s)))
      << server.memory().to_string();
  const auto m = server.memory();
  if (const corvid::memory_usage* p = m.find("pre_auth")) {
    EXPECT_LE(p->current, p->limit);
  }
  // The established client still gets memory for a call bigger than a light one.
  const std::string big(1u << 20, 'y');
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await established.call_for<echo>(patience(5s), big);
      }());
  ASSERT_TRUE(r.has_value()) << r.error().message() << "\n" << server.memory().to_string();
  EXPECT_EQ(r->size(), big.size());
}

TEST(admission_attacks, one_address_holds_a_bounded_share_of_pre_authentication) {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 1;
  cfg.max_pre_auth_per_peer = 4;
  corvid::rpc_server server(cfg);
  server.register_handler<echo>();
  corvid::tls_config tls{.certificate_chain_file = certs().server_cert,
                         .private_key_file = certs().server_key};
  tls.handshake_timeout = 60s;
  ASSERT_FALSE(server.init_tls(std::move(tls)));
  ASSERT_FALSE(server.async_start());
  const std::string ep = "localhost:" + std::to_string(server.port());
  auto try_client = [&] {
    corvid::rpc_client c;
    if (c.init_tls({.ca_file = certs().ca})) return false;
    if (corvid::sync_wait(corvid::test::connect(c, ep))) return false;
    auto r =
        corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
          co_return co_await c.call_for<echo>(patience(5s), std::string("hi"));
        }());
    return r.has_value();
  };
  // Four silent connections take this address's share...
  std::vector<corvid_attack::raw_socket> silent;
  for (int i = 0; i < 4; ++i) silent.emplace_back(server.port());
  ASSERT_TRUE(eventually(
      [&] {
        const auto m = server.memory();
        const corvid::memory_usage* p = m.find("pre_auth");
        return p != nullptr && p->children.size() >= 4;
      },
      patience(5s)));
  // ... so a fifth from it is closed at once, without a handshake.
  corvid_attack::raw_socket fifth(server.port());
  ASSERT_TRUE(fifth.ok());
  EXPECT_TRUE(fifth.closed_by_peer_within(patience(5s)));
  EXPECT_FALSE(try_client());
  // One of them resets: its place is free at once (not when a timer fires).
  silent.front().reset();
  EXPECT_TRUE(eventually(try_client, patience(5s)));
}

}  // namespace
