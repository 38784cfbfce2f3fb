// Calls in latency mode: server_config::busy_poll and client_config::busy_poll reach the
// reactors (a spinning reactor burns CPU while idle within its budget), and every kind of call
// still works with both sides spinning.
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "thread_cpu.hpp"

namespace corvid_test {
namespace {

corvid::task<std::string> calls_work(std::string ep, corvid::client_config cfg) {
  corvid::rpc_client client(cfg);
  if (auto ec = co_await client.connect(ep)) co_return "connect: " + ec.message();
  for (int i = 0; i < 50; ++i) {
    auto r = co_await client.call<echo>("ping " + std::to_string(i));
    if (!r || *r != "ping " + std::to_string(i)) co_return "echo " + std::to_string(i);
  }
  auto slept = co_await client.call<sleepy>(15);  // a timer on the spinning server reactor
  if (!slept || *slept != 15) co_return "sleepy";
  // Pipelined calls: several in flight on one connection.
  std::vector<corvid::async_reply_t<add>> pending;
  for (int i = 0; i < 16; ++i) pending.push_back(co_await client.send_request<add>(i, 1));
  for (int i = 0; i < 16; ++i) {
    auto r = co_await std::move(pending[static_cast<std::size_t>(i)]);
    if (!r || *r != i + 1) co_return "add " + std::to_string(i);
  }
  co_return "ok";
}

corvid::server_config spinning_server(std::chrono::microseconds budget,
                                      corvid::test::thread_cpu_clock* cpu = nullptr) {
  auto cfg = test_server::make_config();
  cfg.io_threads = 1;
  cfg.busy_poll = budget;
  if (cpu != nullptr)
    cfg.on_thread_start = [cpu](std::size_t) {
      cpu->capture();
    };
  return cfg;
}

TEST(busy_poll, calls_work_with_server_and_client_spinning) {
  test_server srv(spinning_server(200us));
  corvid::io_pool reactors(1);
  corvid::client_config cfg;
  cfg.pool = &reactors;
  cfg.busy_poll = 200us;
  EXPECT_EQ(corvid::sync_wait(calls_work(srv.endpoint(), cfg)), "ok");
  EXPECT_EQ(reactors.busy_poll(), 200us) << "the client must raise its pool's budget";
}

TEST(busy_poll, client_on_the_default_pool_raises_its_budget) {
  test_server srv(spinning_server(200us));
  corvid::client_config cfg;
  cfg.busy_poll = 300us;
  EXPECT_EQ(corvid::sync_wait(calls_work(srv.endpoint(), cfg)), "ok");
  EXPECT_GE(corvid::io_pool::default_pool().busy_poll(), 300us);
}

TEST(busy_poll, server_budget_reaches_its_reactors) {
  corvid::test::thread_cpu_clock cpu;
  test_server srv(spinning_server(std::chrono::seconds(10), &cpu));
  while (!cpu.ready()) std::this_thread::yield();
  ASSERT_EQ(corvid::sync_wait(calls_work(srv.endpoint(), {})), "ok");
  // Within its 10 s budget after the calls, the server reactor spins instead of sleeping: it
  // keeps using CPU with nothing to do (a sleeping one would never reach 50 ms of it).
  const auto before = cpu.used();
  EXPECT_TRUE(eventually([&] { return cpu.used() - before >= 50ms; }, 10s));
}

}  // namespace
}  // namespace corvid_test
