// The admin sessions' pools (src/admin/admin_host.hpp): each listener has its own, each peer
// address a bounded share of it, and a peer that leaves gives its place back at once. Peers
// are told apart by their loopback source address (127.0.0.x).
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "admin/admin_host.hpp"

#include "http_client.hpp"
#include "slowdown.hpp"
#include "test_support.hpp"

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
  for (const char* a : attackers) open_partial(slow, srv.port(), 4, a);
  ASSERT_GE(std::size(attackers) * max_admin_sessions_per_peer, max_admin_sessions);
  // The RPC port's sessions are all taken: a newcomer there is refused...
  ASSERT_TRUE(eventually([&] { return health_is(srv.port(), 503, "127.0.0.21"); }));
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
  // Its own next request is refused once it holds what it may...
  ASSERT_TRUE(eventually([&] { return health_is(srv.port(), 503, "127.0.0.1"); }));
  // ...and another address still gets a session.
  EXPECT_TRUE(health_is(srv.port(), 200, "127.0.0.2"));
  // Of the partial ones, all but the share were answered 503 (not left waiting).
  int refused = 0;
  for (auto& s : slow) {
    ::shutdown(s->socket().native_handle(), SHUT_WR);  // the held ones end at this FIN
    refused += status_of(s->read_all()) == 503 ? 1 : 0;
  }
  EXPECT_EQ(refused, static_cast<int>(max_admin_sessions + 4 - max_admin_sessions_per_peer));
}

// A peer that resets (or half-closes) its connection mid-request gives its place back at once,
// not when the session's 10 s timer fires.
TEST(admin_sessions, a_peer_that_leaves_gives_its_place_back_at_once) {
  auto cfg = test_server::make_config();
  cfg.admin_address = "127.0.0.1:0";
  test_server srv(cfg);
  const std::uint16_t admin_port = srv.server().admin_port();
  std::vector<std::unique_ptr<http_socket>> held;
  open_partial(held, admin_port, static_cast<int>(max_admin_sessions_per_peer), "127.0.0.3");
  ASSERT_TRUE(eventually([&] { return health_is(admin_port, 503, "127.0.0.3"); }));
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
