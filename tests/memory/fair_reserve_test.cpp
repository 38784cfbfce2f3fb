// connection_memory's fair reserve: connections that already hold much cannot take the
// server's last sixteenth, so a connection that holds little still gets room for its calls
// and replies while heavy ones fill the server.
#include <gtest/gtest.h>

#include "memory/server_memory.hpp"

namespace corvid_test {
namespace {

using corvid::detail::connection_memory;
using corvid::detail::server_memory;
constexpr std::size_t kib = 1024, mib = 1024 * kib;

corvid::server_config config_of(std::size_t bytes) {
  corvid::server_config cfg;
  cfg.max_memory = corvid::memory_limit::bytes(bytes);
  cfg.max_queued_reply_bytes = bytes;  // only the server's limit stops the heavy ones
  return cfg;
}

// Queues 1 MiB replies on `c` until refused: the bytes it holds.
std::size_t fill_with_replies(connection_memory& c) {
  std::size_t queued = 0;
  while (c.reserve_reply(mib, queued)) {
    queued += mib;
    c.settle_replies(queued);
  }
  return queued;
}

TEST(fair_reserve, heavy_connections_leave_the_last_sixteenth_to_light_ones) {
  const auto cfg = config_of(64 * mib);
  server_memory mem(cfg);
  ASSERT_EQ(mem.fair_reserve, 4 * mib);
  ASSERT_EQ(mem.light_limit, 256 * kib);
  connection_memory a(mem, "a"), b(mem, "b"), light(mem, "light");
  const std::size_t held = fill_with_replies(a) + fill_with_replies(b);
  EXPECT_LE(mem.server.current(), 64 * mib - mem.fair_reserve);  // 1 MiB replies: all heavy
  EXPECT_GE(held, 64 * mib - mem.fair_reserve - 2 * mib) << "heavy ones still use the rest";

  // The light connection: a small call and its reply, from the reserve.
  EXPECT_TRUE(light.reserve_reply(4 * kib, 0));
  EXPECT_TRUE(light.admit(512));
  EXPECT_GE(light.call_available(), 512u);
  // A reply that would make it heavy is refused like the heavy ones' are.
  EXPECT_FALSE(light.reserve_reply(mem.light_limit, 0));
  EXPECT_LE(mem.server.current(), mem.server.limit());
}

TEST(fair_reserve, a_light_connection_may_use_the_whole_limit_up_to_its_light_share) {
  const auto cfg = config_of(64 * mib);
  server_memory mem(cfg);
  connection_memory heavy(mem, "heavy"), l1(mem, "l1"), l2(mem, "l2");
  fill_with_replies(heavy);
  // Light connections share the reserve, each while it holds at most light_limit.
  EXPECT_TRUE(l1.reserve_reply(mem.light_limit - 64 * kib, 0));
  EXPECT_TRUE(l2.reserve_reply(mem.light_limit - 64 * kib, 0));
  EXPECT_FALSE(l1.stays_light(128 * kib));
  EXPECT_LE(mem.server.current(), mem.server.limit());
}

TEST(fair_reserve, an_unlimited_server_has_no_reserve) {
  corvid::server_config cfg;
  cfg.max_memory = corvid::memory_limit::none();
  server_memory mem(cfg);
  EXPECT_EQ(mem.fair_reserve, 0u);
  connection_memory c(mem, "c");
  EXPECT_TRUE(c.reserve_reply(512 * mib, 0));
  EXPECT_TRUE(c.admit(256 * mib));
}

}  // namespace
}  // namespace corvid_test
