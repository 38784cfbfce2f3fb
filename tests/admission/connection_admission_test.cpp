// connection_admission on its own: the verdict for each limit and share, without a socket.
#include "admission/connection_admission.hpp"

#include <gtest/gtest.h>

namespace corvid::detail {
namespace {

protocol::frame_header request(std::uint64_t id, std::uint32_t body = 16) {
  protocol::frame_header h;
  h.type = protocol::msg_type::request;
  h.request_id = id;
  h.body_length = body;
  return h;
}

server_config small_config() {
  server_config c;
  c.max_memory = memory_limit::bytes(64u << 20);
  c.max_calls_per_connection = 4;
  c.max_streams_per_connection = 2;
  c.worker_queue_length = 16;  // a share of 2 per connection
  return c;
}

struct admission_fixture : ::testing::Test {
  server_config config = small_config();
  server_memory memory{config};
  connection_admission adm{memory, config, "peer"};

  bool admits(std::uint64_t id, bool blocking = false, bool duplicate = false) {
    const bool ok = adm.admits_request(request(id), duplicate, blocking, 0);
    if (ok) adm.memory().return_admitted();
    return ok;
  }
  verdict decide(std::uint64_t id, bool blocking = false, bool duplicate = false) {
    return adm.decide_request(request(id), duplicate, blocking, 0);
  }
};

TEST_F(admission_fixture, a_connection_pauses_at_its_share_of_the_worker_queue) {
  ASSERT_EQ(adm.blocking_share(), 2u);
  for (std::uint64_t id = 1; id <= 2; ++id) {
    ASSERT_TRUE(admits(id, true));
    adm.call_started();
    adm.blocking_queued(0);
  }
  EXPECT_FALSE(admits(3, true));
  const verdict v = decide(3, true);
  EXPECT_EQ(v.what, verdict::kind::pause);
  EXPECT_EQ(v.reason, pause_reason::workers);
  // Plain calls are not held back by the worker share.
  EXPECT_TRUE(admits(4, false));
  adm.pause(v.reason);
  EXPECT_TRUE(adm.paused());
  // One of its blocking calls ends: the pause lifts, and the next one is admitted.
  EXPECT_TRUE(adm.call_finished(true));
  EXPECT_FALSE(adm.paused());
  EXPECT_TRUE(admits(3, true));
}

TEST_F(admission_fixture, a_connection_pauses_at_its_share_of_the_worker_queue_bytes) {
  // worker_queue_bytes 64 MiB: a share of 8 MiB.
  ASSERT_TRUE(adm.admits_request(request(1, 6u << 20), false, true, 0));
  adm.memory().return_admitted();
  adm.call_started();
  adm.blocking_queued(6u << 20);
  EXPECT_FALSE(adm.worker_share_left(4u << 20));
  const verdict v = adm.decide_request(request(2, 4u << 20), false, true, 0);
  EXPECT_EQ(v.what, verdict::kind::pause);
  EXPECT_EQ(v.reason, pause_reason::workers);
  EXPECT_TRUE(adm.worker_share_left(1u << 20));
  adm.pause(v.reason);
  EXPECT_TRUE(adm.call_finished(true, 6u << 20));
  EXPECT_TRUE(adm.worker_share_left(4u << 20));
}

TEST_F(admission_fixture, light_connections_may_take_the_worker_reserve) {
  EXPECT_TRUE(adm.blocking_light());
  adm.call_started();
  adm.blocking_queued(0);
  EXPECT_TRUE(adm.blocking_light());
  adm.call_started();
  adm.blocking_queued(0);
  EXPECT_FALSE(adm.blocking_light());
}

TEST_F(admission_fixture, a_connection_pauses_at_its_call_cap) {
  for (std::uint64_t id = 1; id <= 4; ++id) {
    ASSERT_TRUE(admits(id));
    adm.call_started();
  }
  const verdict v = decide(5);
  EXPECT_EQ(v.what, verdict::kind::pause);
  EXPECT_EQ(v.reason, pause_reason::calls);
  adm.pause(v.reason);
  EXPECT_TRUE(adm.call_finished(false));
  EXPECT_TRUE(admits(5));
}

TEST_F(admission_fixture, broken_ids_fail_the_connection) {
  EXPECT_FALSE(admits(0));
  EXPECT_EQ(decide(0).what, verdict::kind::fail);
  EXPECT_FALSE(admits(7, false, true));
  const verdict v = decide(7, false, true);
  EXPECT_EQ(v.what, verdict::kind::fail);
  EXPECT_EQ(v.code, rpc_errc::protocol_error);
  EXPECT_NE(v.message.find("reused"), std::string::npos);
}

TEST_F(admission_fixture, a_draining_connection_refuses_new_calls) {
  adm.stop_admitting();
  EXPECT_FALSE(admits(1));
  const verdict v = decide(1);
  EXPECT_EQ(v.what, verdict::kind::refuse);
  EXPECT_EQ(v.code, rpc_errc::server_busy);
}

TEST_F(admission_fixture, streams_are_refused_past_their_cap) {
  EXPECT_TRUE(adm.open_stream().admitted());
  EXPECT_TRUE(adm.open_stream().admitted());
  const verdict v = adm.open_stream();
  EXPECT_EQ(v.what, verdict::kind::refuse);
  EXPECT_NE(v.message.find("max_streams_per_connection = 2"), std::string::npos);
  adm.stream_closed();
  EXPECT_TRUE(adm.open_stream().admitted());
}

TEST(connection_admission, a_held_item_is_charged_and_refused_past_the_memory) {
  server_config config = small_config();
  config.max_memory = memory_limit::bytes(4u << 20);
  server_memory memory{config};
  connection_admission adm{memory, config, "peer"};
  const std::size_t before = memory.in_flight.current();
  ASSERT_TRUE(adm.hold(256 * 1024));
  EXPECT_GE(memory.in_flight.current() - before, 256u * 1024);
  // Far more than the server has: refused, nothing charged for it.
  const std::size_t held = memory.in_flight.current();
  EXPECT_FALSE(adm.hold(8u << 20));
  EXPECT_EQ(memory.in_flight.current(), held);
  adm.release(256 * 1024);
  adm.memory().end_batch();  // the credit step left over goes back too
  EXPECT_EQ(memory.in_flight.current(), before);
}

TEST(connection_admission, a_stream_item_that_could_never_fit_is_refused_not_waited_for) {
  server_config config = small_config();
  config.max_memory = memory_limit::bytes(4u << 20);
  server_memory memory{config};
  connection_admission adm{memory, config, "peer"};
  const verdict v = adm.admit_item(64u << 20);
  EXPECT_EQ(v.what, verdict::kind::refuse);
  EXPECT_EQ(v.code, rpc_errc::message_too_large);
}

TEST(connection_admission, pre_authentication_never_takes_the_fair_reserve) {
  server_config config;
  config.max_memory = memory_limit::bytes(16u << 20);
  server_memory memory{config};
  ASSERT_EQ(memory.pre_auth.limit(), 2u << 20);  // an eighth
  // Fill the server with established reads and calls up to its fair reserve.
  connection_memory heavy{memory, "heavy"};
  ASSERT_TRUE(heavy.reserve_read(memory.read_buffers.limit()));
  std::size_t taken = 0;
  while (heavy.hold(64 * 1024)) taken += 64 * 1024;
  ASSERT_GT(taken, 0u);
  ASSERT_LE(memory.server.available(), memory.fair_reserve + 96 * 1024);
  connection_memory stranger{memory, "stranger"};
  EXPECT_FALSE(stranger.reserve_pre_auth(96 * 1024, "stranger"));
  EXPECT_EQ(memory.pre_auth.current(), 0u);
}

TEST(connection_admission, a_first_read_buffer_passes_a_full_read_share_but_not_the_reserve) {
  server_config config;
  config.max_memory = memory_limit::bytes(16u << 20);
  server_memory memory{config};
  connection_memory reads{memory, "reads"};
  ASSERT_TRUE(reads.reserve_read(memory.read_buffers.limit()));  // the read share is full
  connection_memory fresh{memory, "fresh"};
  EXPECT_FALSE(fresh.reserve_read(8192));
  EXPECT_TRUE(fresh.reserve_first_read(8192));  // the server has room beyond its reserve
  // Calls take the rest up to the fair reserve: the next first buffer waits.
  connection_memory calls{memory, "calls"};
  for (std::size_t step : {64u * 1024, 4096u, 512u}) {
    while (calls.hold(step)) {
    }
  }
  connection_memory late{memory, "late"};
  EXPECT_FALSE(late.reserve_first_read(8192));
  EXPECT_LE(memory.server.current(), memory.server.limit());
}

TEST(connection_admission, pre_authentication_has_a_budget_of_its_own) {
  server_config config;
  config.max_memory = memory_limit::bytes(16u << 20);
  server_memory memory{config};
  std::vector<std::unique_ptr<connection_memory>> crowd;
  std::size_t admitted = 0;
  for (int i = 0; i < 100; ++i) {
    crowd.push_back(std::make_unique<connection_memory>(memory, "c" + std::to_string(i)));
    if (crowd.back()->reserve_pre_auth(96 * 1024, "c")) ++admitted;
  }
  EXPECT_EQ(admitted, (2u << 20) / (96 * 1024));
  EXPECT_LE(memory.pre_auth.current(), memory.pre_auth.limit());
  // An authenticated session moves to tls_sessions; the budget frees for the next one.
  ASSERT_TRUE(crowd.front()->end_pre_auth(true, "c0"));
  EXPECT_EQ(memory.tls_sessions.current(), 96u * 1024);
  connection_memory next{memory, "next"};
  EXPECT_TRUE(next.reserve_pre_auth(96 * 1024, "next"));
}

}  // namespace
}  // namespace corvid::detail
