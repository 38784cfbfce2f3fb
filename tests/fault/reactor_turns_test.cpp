// A peer whose requests piled up while its reactor was busy does not hold that reactor for
// the whole pile: a batch that has queued a turn's worth of replies yields, and the other
// connections on the reactor are served before the rest of the pile.
#include <atomic>
#include <thread>

#include "attacks.hpp"
#include "slowdown.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

using corvid::test::patience;
constexpr std::size_t MiB = 1024 * 1024;

std::atomic<int> piled_done{0};
std::atomic<bool> first_started{false};
std::atomic<bool> release_first{false};

// A 1 MiB reply; the first call blocks its reactor until the test releases it, so that what
// is sent meanwhile (the whole pile, and the other client's call) is waiting when it returns.
std::string piled(int n) {
  if (!first_started.exchange(true)) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);  // hung
    while (!release_first && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
  }
  ++piled_done;
  return std::string(static_cast<std::size_t>(n), 'p');
}
// How many piled calls had been answered when this one ran.
int seen() { return piled_done.load(); }

TEST(reactor_turns, a_pile_of_big_calls_does_not_hold_the_reactor_for_other_connections) {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 1;  // every connection on one reactor
  cfg.max_memory = corvid::memory_limit::bytes(1024 * MiB);
  cfg.max_queued_reply_bytes = 512 * MiB;  // no limit pauses the pile: only the turn budget
  corvid::rpc_server server(cfg);
  server.register_handler<piled, seen>();
  ASSERT_FALSE(server.async_start());
  const std::string ep = "127.0.0.1:" + std::to_string(server.port());

  corvid::rpc_client other;
  ASSERT_FALSE(corvid::sync_wait(connect(other, ep)));
  constexpr int pile = 64;
  std::string requests;
  for (std::uint64_t id = 1; id <= pile; ++id) {
    requests += corvid_attack::encoded_request(id, corvid::protocol::function_id<piled>(),
                                               static_cast<int>(MiB));
  }
  corvid_attack::raw_socket peer(server.port());
  ASSERT_TRUE(peer.ok());
  ASSERT_TRUE(peer.send(requests));  // one write: the server reads the pile in one batch
  ASSERT_TRUE(eventually([] { return first_started.load(); }, patience(std::chrono::seconds(5))));

  auto pending = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<seen>> {
    co_return co_await other.send_request<seen>();
  }());
  // Once the other call is in the server's socket too, the reactor may go on.
  ASSERT_TRUE(eventually([&] { return other.stats().frames_sent >= 1; },
                         patience(std::chrono::seconds(5))));
  release_first = true;
  const auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await std::move(pending);
  }());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  std::printf("the other connection's call ran after %d of %d piled calls\n", *r, pile);
  // A turn is 256 KiB of replies, one of these calls: the other connection's call waits for
  // a few turns, not for the pile.
  EXPECT_LE(*r, 8) << "the pile held the reactor";
}

}  // namespace
}  // namespace corvid_test
