// The admin sessions' pools (src/admin/admin_host.hpp): each listener has its own, each peer
// address a bounded share of it, and a peer that leaves gives its place back at once. Peers
// are told apart by their loopback source address (127.0.0.x).
#include <algorithm>
#include <memory>
#include <poll.h>
#include <string>
#include <vector>

#include "admin/admin_host.hpp"
#include "http_client.hpp"
#include "slowdown.hpp"
#include "test_support.hpp"
#include <sys/socket.h>

namespace corvid_test {
namespace {

using corvid::admin::max_admin_sessions;
using corvid::admin::max_admin_sessions_per_peer;

// Opens `n` admin requests from `from` that never complete: each holds a session (or was
// answered 503) until its timer, which is 10 s away.
void open_partial(std::vector<std::unique_ptr<http_socket>>& out, std::uint16_t port, int n,
                  const char* from) {
  for (int i = 0; i < n; ++i) {
    out.push_back(std::make_unique<http_socket>(port, 15, from));
    ASSERT_TRUE(out.back()->send("GET /health HTTP/1.1\r\n"));
  }
}

// How many of `sockets` have an answer (a 503, as nothing else completes their requests):
// those refused a place. Polled, not read, so that the held ones stay held.
bool is_answered(http_socket& s) {
  pollfd f{s.socket().native_handle(), POLLIN, 0};
  return ::poll(&f, 1, 0) == 1 && (f.revents & (POLLIN | POLLHUP)) != 0;
}
std::size_t refused(const std::vector<std::unique_ptr<http_socket>>& sockets) {
  return static_cast<std::size_t>(
      std::count_if(sockets.begin(), sockets.end(), [](const auto& s) { return is_answered(*s); }));
}

// Waits until exactly `n` of `sockets` were refused: with no other peer about, a refusal
// means the pool (or the peer's share) was full, so the others then hold their places. (A
// probe sent earlier could take a place an attacker was about to get.)
void wait_refused(const std::vector<std::unique_ptr<http_socket>>& sockets, std::size_t n) {
  ASSERT_TRUE(eventually([&] { return refused(sockets) >= n; }))
      << refused(sockets) << " refused, " << n << " expected";
  EXPECT_EQ(refused(sockets), n);
}

bool health_is(std::uint16_t port, int status, const char* from) {
  return status_of(http_get(port, "/health", "GET", from)) == status;
}

// Partial requests from many addresses fill the RPC port's pool; the private admin port has a
// pool of its own and keeps answering.
TEST(admin_sessions, slow_requests_on_the_rpc_port_leave_admin_address_served) {
  auto cfg = test_server::make_config();
  cfg.http_admin = true;
  cfg.admin_address = "127.0.0.1:0";
  test_server srv(cfg);
  const std::uint16_t admin_port = srv.server().admin_port();
  ASSERT_NE(admin_port, 0);
  std::vector<std::unique_ptr<http_socket>> slow;
  const char* attackers[] = {"127.0.0.11", "127.0.0.12", "127.0.0.13",
                             "127.0.0.14", "127.0.0.15", "127.0.0.16"};
  for (const char* a : attackers) {
    open_partial(slow, srv.port(), static_cast<int>(max_admin_sessions_per_peer), a);
  }
  ASSERT_GT(slow.size(), max_admin_sessions);
  wait_refused(slow, slow.size() - max_admin_sessions);
  // The RPC port's sessions are all taken: a newcomer there is refused...
  EXPECT_TRUE(health_is(srv.port(), 503, "127.0.0.21"));
  // ...while the private port answers, from the same host as the newcomer or another.
  EXPECT_TRUE(health_is(admin_port, 200, "127.0.0.21"));
  EXPECT_TRUE(health_is(admin_port, 200, nullptr));
}

// One address holds at most its share of the RPC port's sessions; another is served.
TEST(admin_sessions, one_peer_address_cannot_take_every_rpc_port_session) {
  auto cfg = test_server::make_config();
  cfg.http_admin = true;
  test_server srv(cfg);
  std::vector<std::unique_ptr<http_socket>> slow;
  open_partial(slow, srv.port(), static_cast<int>(max_admin_sessions) + 4, "127.0.0.1");
  // All but its share are refused, and so is its next request...
  wait_refused(slow, slow.size() - max_admin_sessions_per_peer);
  EXPECT_TRUE(health_is(srv.port(), 503, "127.0.0.1"));
  // ...and another address still gets a session.
  EXPECT_TRUE(health_is(srv.port(), 200, "127.0.0.2"));
  // The refused ones were answered 503 (not left waiting).
  std::size_t answered_503 = 0;
  for (auto& s : slow) {
    ::shutdown(s->socket().native_handle(), SHUT_WR);  // the held ones end at this FIN
    answered_503 += status_of(s->read_all()) == 503 ? 1 : 0;
  }
  EXPECT_EQ(answered_503, slow.size() - max_admin_sessions_per_peer);
}

// A peer that resets (or half-closes) its connection mid-request gives its place back at once,
// not when the session's 10 s timer fires.
TEST(admin_sessions, a_peer_that_leaves_gives_its_place_back_at_once) {
  auto cfg = test_server::make_config();
  cfg.admin_address = "127.0.0.1:0";
  test_server srv(cfg);
  const std::uint16_t admin_port = srv.server().admin_port();
  std::vector<std::unique_ptr<http_socket>> held;
  open_partial(held, admin_port, static_cast<int>(max_admin_sessions_per_peer) + 1, "127.0.0.3");
  wait_refused(held, 1);  // the others hold the peer's whole share
  std::erase_if(held, [](const auto& s) { return is_answered(*s); });
  ASSERT_EQ(held.size(), max_admin_sessions_per_peer);
  EXPECT_TRUE(health_is(admin_port, 503, "127.0.0.3"));
  for (std::size_t i = 0; i < held.size(); ++i) {
    const int fd = held[i]->socket().native_handle();
    if (i % 2 == 0) {
      const linger reset{1, 0};  // close() sends a RST
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      held[i].reset();
    } else {
      ::shutdown(fd, SHUT_WR);  // FIN: the request will never be whole
    }
  }
  // Well inside the 10 s the timers would take (a coarse bound: "it hung").
  EXPECT_TRUE(eventually([&] { return health_is(admin_port, 200, "127.0.0.3"); },
                         corvid::test::patience(std::chrono::milliseconds(3000))));
}

}  // namespace
}  // namespace corvid_test
