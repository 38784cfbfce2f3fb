// Hostile clients against a live server (attacks.hpp): slowloris, lying lengths, thousands of
// connections opened and dropped, large transfers cut off. Throughout, a well-behaved client
// (good_client.hpp) keeps calling and must see no failure; afterwards the server holds no
// connection but its own. Its latency under these attacks is measured by attack_bench, not
// here.
#include <dirent.h>

#include "attacks.hpp"
#include "good_client.hpp"
#include "slowdown.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

using corvid_attack::raw_socket;
constexpr std::uint32_t echo_id = corvid::protocol::function_id<echo>();

// The limits below are liveness bounds, scaled by CORVID_TEST_SLOWDOWN (slowdown.hpp).
using corvid::test::patience;

// The well-behaved client: its calls must all succeed, each within 2 s (scaled).
class good : public corvid_attack::good_client<echo> {
 public:
  explicit good(std::string endpoint)
      : good_client(std::move(endpoint), 64, 0ms, patience(2000ms)) {}
};

std::size_t open_fds() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n;
}

// Waits up to 10 s (scaled) for the server to hold at most `n` connections.
bool connections_drop_to(test_server& srv, std::size_t n) {
  return eventually([&] { return srv.server().connection_count() <= n; }, patience(10s));
}

void expect_good_client_unharmed(good& g) {
  EXPECT_TRUE(g.wait_for_calls(20, patience(10s)))
      << "the well-behaved client stopped getting replies (" << g.ok() << " ok, " << g.failed()
      << " failed: " << g.first_error() << ")";
  g.stop();
  EXPECT_EQ(g.failed(), 0u) << g.first_error();
  EXPECT_GT(g.ok(), 20u);
}

TEST(hostile, slowloris_header_dribbled_one_byte_per_second_is_closed) {
  auto cfg = test_server::make_config();
  cfg.frame_read_timeout = 1500ms;
  test_server srv(cfg);
  good g(srv.endpoint());
  ASSERT_TRUE(g.wait_for_calls(1, patience(10s)));
  const std::string header = corvid_attack::request_header(1, echo_id, 16);
  constexpr int n = 20;
  std::vector<raw_socket> conns;
  for (int i = 0; i < n; ++i) conns.emplace_back(srv.port());
  std::vector<int> sent(n, 0), closed_after_s(n, -1);
  // One byte per second to each until the server closes it; a header is 32 bytes, so a
  // connection still open after 10 bytes (10 s) was not timed out.
  for (int second = 0; second < 10; ++second) {
    if (std::count(closed_after_s.begin(), closed_after_s.end(), -1) == 0) break;
    for (int i = 0; i < n; ++i) {
      if (closed_after_s[i] >= 0) continue;
      if (conns[i].peer_closed() ||
          !conns[i].send(std::string_view(header).substr(static_cast<std::size_t>(sent[i]), 1))) {
        closed_after_s[i] = second;
        continue;
      }
      ++sent[i];
    }
    std::this_thread::sleep_for(1s);  // about time: the attack is a byte per second
  }
  for (int i = 0; i < n; ++i) {
    EXPECT_GE(closed_after_s[i], 1) << "connection " << i << " closed before its 1.5 s";
    EXPECT_LE(closed_after_s[i], 5)
        << "connection " << i << " was not closed (" << sent[i] << " header bytes sent)";
  }
  EXPECT_TRUE(connections_drop_to(srv, 1));
  expect_good_client_unharmed(g);
}

TEST(hostile, body_shorter_than_its_header_says_then_a_stall_is_closed) {
  auto cfg = test_server::make_config();
  cfg.frame_read_timeout = 1000ms;
  test_server srv(cfg);
  good g(srv.endpoint());
  std::vector<raw_socket> liars;
  for (int i = 0; i < 10; ++i) {
    liars.emplace_back(srv.port());
    // The body claims 1000 bytes; 10 arrive, then nothing.
    ASSERT_TRUE(liars.back().send(corvid_attack::request_header(3, echo_id, 1000) + "0123456789"));
  }
  for (auto& l : liars) EXPECT_TRUE(l.closed_by_peer_within(6s));
  EXPECT_TRUE(connections_drop_to(srv, 1));
  expect_good_client_unharmed(g);
}

TEST(hostile, body_longer_than_its_header_says_is_a_protocol_error) {
  test_server srv;
  good g(srv.endpoint());
  raw_connection c(srv.port());
  // A valid echo of "ok", then 64 bytes where the next header should start.
  c.send(corvid_attack::string_request(5, echo_id, "ok") + std::string(64, '\x7f'));
  auto reply = c.read_frame();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->header.request_id, 5u);
  EXPECT_EQ(reply->header.status, corvid::rpc_errc::ok);
  auto error = c.read_frame();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->header.status, corvid::rpc_errc::protocol_error);
  EXPECT_TRUE(c.closed_by_peer());
  expect_good_client_unharmed(g);
}

TEST(hostile, length_over_the_limit_is_refused_before_reading_it) {
  auto cfg = test_server::make_config();
  cfg.max_frame_size = 1 << 20;
  test_server srv(cfg);
  good g(srv.endpoint());
  raw_connection c(srv.port());
  // Claims 3 GiB (body + attachment) and sends 1 KiB of it.
  c.send(corvid_attack::request_header(6, echo_id, 1u << 31, 1u << 30) + std::string(1024, 'z'));
  auto error = c.read_frame();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->header.status, corvid::rpc_errc::message_too_large);
  EXPECT_EQ(error->header.request_id, 6u);
  EXPECT_TRUE(c.closed_by_peer());
  expect_good_client_unharmed(g);
}

TEST(hostile, thousands_of_connections_opened_and_dropped) {
  test_server srv;
  good g(srv.endpoint());
  ASSERT_TRUE(g.wait_for_calls(1, patience(10s)));
  const auto fds_before = open_fds();
  std::atomic<bool> stop{false};
  corvid_attack::attack_context a{srv.port(), echo_id, stop};
  std::vector<std::thread> attackers;
  for (unsigned t = 0; t < 2; ++t)
    attackers.emplace_back([&, t] { corvid_attack::churn(a, t + 1); });
  EXPECT_TRUE(eventually([&] { return a.actions.load() >= 5000; }, 60s));
  stop = true;
  for (auto& t : attackers) t.join();
  EXPECT_GE(a.actions.load(), 5000u);
  EXPECT_TRUE(connections_drop_to(srv, 1)) << srv.server().connection_count() << " left";
  // Every dropped connection's descriptor was released (a little slack for asio internals).
  EXPECT_LE(open_fds(), fds_before + 4);
  expect_good_client_unharmed(g);
}

TEST(hostile, random_disconnects_during_large_transfers) {
  test_server srv;
  good g(srv.endpoint());
  ASSERT_TRUE(g.wait_for_calls(1, patience(10s)));
  std::atomic<bool> stop{false};
  corvid_attack::attack_context a{srv.port(), echo_id, stop};
  std::vector<std::thread> attackers;
  // At most 200 cut-off connections each: the attack must not outlast what the server can
  // drain in the time the test gives it.
  for (unsigned t = 0; t < 2; ++t) {
    attackers.emplace_back([&, t] { corvid_attack::large_disconnects(a, t + 11, 200); });
  }
  // Meanwhile real clients start 1 MiB calls and go away mid-transfer: closed or destroyed
  // with the call in flight.
  const std::string big(1 << 20, 'b');
  for (int i = 0; i < 30; ++i) {
    auto c = std::make_unique<corvid::rpc_client>();
    ASSERT_FALSE(corvid::sync_wait(connect(*c, srv.endpoint())));
    corvid::sync_wait([&]() -> corvid::task<void> {
      auto pending = co_await c->send_request<echo>(std::string_view(big));
      // About time: goes away at a different point of the transfer each time.
      std::this_thread::sleep_for(std::chrono::microseconds(i * 100));
      if (i % 2) c->close();
      c.reset();
      auto r = co_await std::move(pending);  // ends: value or connection_closed
      EXPECT_TRUE(r ? r->size() == big.size()
                    : r.error().code() == corvid::rpc_errc::connection_closed)
          << (r ? "a reply of " + std::to_string(r->size()) + " bytes" : r.error().message());
    }());
  }
  EXPECT_TRUE(eventually([&] { return a.actions.load() >= 300; }, patience(60s)));
  stop = true;
  for (auto& t : attackers) t.join();
  EXPECT_GE(a.actions.load(), 300u);
  EXPECT_TRUE(connections_drop_to(srv, 1)) << srv.server().connection_count() << " left";
  // The server still moves a large call intact.
  corvid::rpc_client c;
  ASSERT_FALSE(corvid::sync_wait(connect(c, srv.endpoint())));
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await c.call_for<echo>(patience(10s), std::string_view(big));
      }());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(*r, big);
  expect_good_client_unharmed(g);
}

}  // namespace
}  // namespace corvid_test
