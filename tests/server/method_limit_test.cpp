// rpc_server::set_method_limit: calls of a method past its limit are answered server_busy at
// once, for plain, coroutine and blocking handlers, counting calls running on any connection.
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "server_test_support.hpp"

namespace corvid_server_test {
namespace {

std::atomic<int> entered{0};
std::atomic<bool> release{false};

void reset() {
  entered = 0;
  release = false;
}

bool wait_release(corvid::request_context& ctx) {
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (!release && !ctx.cancelled() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  return release;
}

// Holds its reactor until released.
int plain_held(corvid::request_context& ctx) {
  ++entered;
  return wait_release(ctx) ? 1 : 0;
}
corvid::task<int> coroutine_held(corvid::request_context& ctx) {
  ++entered;
  while (!release && !ctx.cancelled()) (void)co_await ctx.sleep_for(1ms);
  co_return 2;
}
int blocking_held(corvid::request_context& ctx) {
  ++entered;
  return wait_release(ctx) ? 3 : 0;
}
int quick(int x) { return x; }
// Which reactor the caller's connection is on (its address, as a number).
std::uint64_t where(corvid::request_context& ctx) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&ctx.reactor()));
}
int unlimited(int x) { return x; }

std::unique_ptr<corvid::rpc_server> limited_server(corvid::server_config cfg, std::size_t max) {
  reset();
  auto s = std::make_unique<corvid::rpc_server>(std::move(cfg));
  s->register_handler<plain_held, coroutine_held, quick, unlimited, where>();
  s->register_blocking_handler<blocking_held>();
  s->set_method_limit<plain_held>(max);
  s->set_method_limit<coroutine_held>(max);
  s->set_method_limit<blocking_held>(max);
  s->set_method_limit<quick>(1);
  if (auto ec = s->async_start()) throw std::runtime_error(ec.message());
  return s;
}

template <auto F>
void expect_refused(const result_t<F>& r, std::string_view name, std::size_t max) {
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::server_busy);
  const std::string& m = r.error().message();
  EXPECT_NE(m.find(name), std::string::npos) << m;
  EXPECT_NE(m.find("limit of " + std::to_string(max) + " concurrent calls"), std::string::npos)
      << m;
}

TEST(MethodLimit, CoroutineCallsPastTheLimitAreBusy) {
  auto s = limited_server(loopback_config(2), 2);
  corvid::rpc_client a, b;
  connect(a, *s);
  connect(b, *s);
  auto first = send<coroutine_held>(a);
  auto second = send<coroutine_held>(b);
  ASSERT_TRUE(eventually([] { return entered == 2; }));
  expect_refused<coroutine_held>(call<coroutine_held>(a), "coroutine_held", 2);
  EXPECT_EQ(s->method_refusals<coroutine_held>(), 1u);
  EXPECT_EQ(call<unlimited>(a, 5).value_or(0), 5);  // other methods are not limited
  release = true;
  EXPECT_EQ(await<coroutine_held>(first).value_or(0), 2);
  EXPECT_EQ(await<coroutine_held>(second).value_or(0), 2);
  EXPECT_EQ(call<coroutine_held>(a).value_or(0), 2);  // the places were given back
}

TEST(MethodLimit, BlockingCallsCountFromTheQueue) {
  auto cfg = loopback_config();
  cfg.worker_threads = 1;
  auto s = limited_server(cfg, 2);
  corvid::rpc_client c;
  connect(c, *s);
  auto running = send<blocking_held>(c);
  auto queued = send<blocking_held>(c);  // waits for the one worker, and holds a place
  ASSERT_TRUE(eventually([] { return entered == 1; }));
  expect_refused<blocking_held>(call<blocking_held>(c), "blocking_held", 2);
  EXPECT_EQ(s->method_refusals<blocking_held>(), 1u);
  release = true;
  EXPECT_EQ(await<blocking_held>(running).value_or(0), 3);
  EXPECT_EQ(await<blocking_held>(queued).value_or(0), 3);
  EXPECT_EQ(call<blocking_held>(c).value_or(0), 3);
}

TEST(MethodLimit, PlainCallsCountAcrossConnectionsAndReactors) {
  auto s = limited_server(loopback_config(2), 1);
  corvid::rpc_client a;
  connect(a, *s);
  // Connections are placed on the two reactors in turn, but an extra accept (a connect
  // retried on a loaded machine) shifts the turn: b is the first connection on the other
  // reactor, found by asking (on a's reactor, b's call could not be read while a's holds it).
  const auto a_reactor = call<where>(a).value_or(0);
  std::vector<std::unique_ptr<corvid::rpc_client>> tried;
  corvid::rpc_client* other = nullptr;
  for (int i = 0; i < 8 && other == nullptr; ++i) {
    tried.push_back(std::make_unique<corvid::rpc_client>());
    connect(*tried.back(), *s);
    if (call<where>(*tried.back()).value_or(0) != a_reactor) other = tried.back().get();
  }
  ASSERT_NE(other, nullptr) << "every connection was placed on the first one's reactor";
  corvid::rpc_client& b = *other;
  auto first = send<plain_held>(a);
  ASSERT_TRUE(eventually([] { return entered == 1; }));
  expect_refused<plain_held>(call<plain_held>(b), "plain_held", 1);
  release = true;
  EXPECT_EQ(await<plain_held>(first).value_or(0), 1);
  EXPECT_EQ(call<plain_held>(b).value_or(0), 1);
  EXPECT_EQ(s->method_refusals<plain_held>(), 1u);
}

TEST(MethodLimit, PlainCallsGiveTheirPlaceBackAsTheyReturn) {
  auto s = limited_server(loopback_config(), 1);
  corvid::rpc_client c;
  connect(c, *s);
  std::vector<corvid::async_reply_t<quick>> replies;
  for (int i = 0; i < 200; ++i) replies.push_back(send<quick>(c, i));  // pipelined, limit 1
  for (int i = 0; i < 200; ++i) EXPECT_EQ(await<quick>(replies[i]).value_or(-1), i);
  EXPECT_EQ(s->method_refusals<quick>(), 0u);
}

TEST(MethodLimit, CancelledAndClosedCallsGiveTheirPlaceBack) {
  auto s = limited_server(loopback_config(), 1);
  {
    corvid::rpc_client c;
    connect(c, *s);
    auto r = send<coroutine_held>(c);
    auto b = send<blocking_held>(c);
    ASSERT_TRUE(eventually([] { return entered == 2; }));
    r.cancel();
  }  // closes: the blocking call is cancelled too
  corvid::rpc_client d;
  connect(d, *s);
  release = true;
  EXPECT_TRUE(eventually([&] { return call<coroutine_held>(d).value_or(0) == 2; }));
  EXPECT_TRUE(eventually([&] { return call<blocking_held>(d).value_or(0) == 3; }));
}

TEST(MethodLimit, MisuseIsALogicError) {
  corvid::rpc_server s(loopback_config());
  EXPECT_THROW(s.set_method_limit<quick>(4), std::logic_error);  // not registered yet
  s.register_handler<quick>();
  EXPECT_THROW(s.set_method_limit<quick>(0), std::logic_error);
  s.set_method_limit<quick>(4);
  ASSERT_FALSE(s.async_start());
  EXPECT_THROW(s.set_method_limit<quick>(8), std::logic_error);  // after start
}

}  // namespace
}  // namespace corvid_server_test
