// Server interceptors (server/interceptor.hpp) against a real server over loopback: they see
// each call before its arguments are decoded, refuse it with their code, run in order, end a
// call that throws with `internal`, and may wait (an asynchronous interceptor pauses its
// connection until it answers; the request it waited on, then the rest, go on in order).
#include <atomic>
#include <coroutine>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../support/stream_handlers.hpp"
#include "server_test_support.hpp"

namespace {

std::atomic<int> guarded_runs{0};
std::string guarded(std::string s) {
  ++guarded_runs;
  return "guarded " + s;
}
std::string open_door(std::string s) { return "open " + s; }
int sum(int a, int b) { return a + b; }
int fails(int) { throw std::runtime_error("no"); }
// Waits until cancelled (its caller times out).
corvid::task<int> waits(corvid::request_context& ctx) {
  co_await ctx.sleep_for(std::chrono::seconds(30));
  co_return 1;
}

}  // namespace

namespace corvid_server_test {
namespace {

using corvid::call_info;
using corvid::call_verdict;
using corvid::rpc_errc;

// Refuses `guarded`, lets everything else through, and keeps what it saw.
struct recording_interceptor : corvid::server_interceptor {
  call_verdict on_call(const call_info& call) override {
    std::lock_guard lk(mutex);
    methods.emplace_back(call.method);
    ids.push_back(call.function_id);
    streams.push_back(call.stream);
    peers.emplace_back(call.peer);
    had_deadline.push_back(call.deadline.has_value());
    authenticated.push_back(call.identity->authenticated());
    if (call.method == corvid::protocol::function_name<guarded>())
      return call_verdict::refuse(rpc_errc::permission_denied, "no guarded calls for you");
    return call_verdict::proceed();
  }
  std::mutex mutex;
  std::vector<std::string> methods, peers;
  std::vector<std::uint32_t> ids;
  std::vector<bool> streams, had_deadline, authenticated;
};

class Interceptors : public ::testing::Test {
 protected:
  void SetUp() override { guarded_runs = 0; }
  void start() {
    server_.register_handler<guarded, open_door, sum, fails, waits>();
    corvid_test::streams::register_all(server_);
    ASSERT_FALSE(server_.async_start());
    connect(client_, server_);
  }
  corvid::rpc_server server_{loopback_config()};
  corvid::rpc_client client_;
};

TEST_F(Interceptors, ARefusedCallNeverRunsItsHandlerAndItsCallerGetsTheVerdict) {
  auto rec = std::make_shared<recording_interceptor>();
  server_.add_interceptor(rec);
  start();
  auto r = call<guarded>(client_, std::string("x"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), rpc_errc::permission_denied);
  EXPECT_EQ(r.error().message(), "no guarded calls for you");
  EXPECT_EQ(guarded_runs, 0);
  auto ok = call<open_door>(client_, std::string("y"));
  ASSERT_TRUE(ok.has_value()) << ok.error().message();
  EXPECT_EQ(*ok, "open y");
  std::lock_guard lk(rec->mutex);
  ASSERT_EQ(rec->methods.size(), 2u);
  EXPECT_EQ(rec->methods[1], corvid::protocol::function_name<open_door>());
  EXPECT_EQ(rec->ids[1], corvid::protocol::function_id<open_door>());
  EXPECT_FALSE(rec->streams[1]);
  EXPECT_NE(rec->peers[1].find("127.0.0.1"), std::string::npos);
  EXPECT_FALSE(rec->authenticated[1]);  // plaintext TCP proves nobody
}

TEST_F(Interceptors, ARefusalComesBeforeTheArgumentsAreDecoded) {
  server_.add_interceptor([](const call_info&) {
    return call_verdict::refuse_static(rpc_errc::unauthenticated, "who are you");
  });
  start();
  // sum(int, int) with a body that is not two ints: without the interceptor, bad_request.
  corvid::test::raw_connection raw(server_.port());
  corvid::protocol::frame_header h;
  h.request_id = 9;
  h.function_id = corvid::protocol::function_id<sum>();
  h.body_length = 3;
  std::string bytes(corvid::protocol::header_size, '\0');
  corvid::protocol::encode_header(h, bytes.data());
  raw.send(bytes + "\xff\xff\xff");
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.status, rpc_errc::unauthenticated);
  EXPECT_EQ(f->message(), "who are you");
}

TEST_F(Interceptors, TheyRunInOrderAndTheFirstRefusalEndsTheChain) {
  std::vector<std::string> order;
  std::mutex m;
  server_.add_interceptor([&](const call_info& c) {
    std::lock_guard lk(m);
    order.push_back("first " + std::string(c.method));
    return c.method == corvid::protocol::function_name<guarded>()
               ? call_verdict::refuse(rpc_errc::resource_exhausted, "quota")
               : call_verdict::proceed();
  });
  server_.add_interceptor([&](const call_info& c) {
    std::lock_guard lk(m);
    order.push_back("second " + std::string(c.method));
    return call_verdict::proceed();
  });
  start();
  EXPECT_EQ(call<guarded>(client_, std::string("a")).error().code(), rpc_errc::resource_exhausted);
  EXPECT_TRUE(call<open_door>(client_, std::string("b")).has_value());
  const std::string g(corvid::protocol::function_name<guarded>());
  const std::string o(corvid::protocol::function_name<open_door>());
  EXPECT_EQ(order, (std::vector<std::string>{"first " + g, "first " + o, "second " + o}));
}

TEST_F(Interceptors, OneThatThrowsEndsThatCallWithInternalAndTheConnectionGoesOn) {
  server_.add_interceptor([](const call_info& c) -> call_verdict {
    if (c.method == corvid::protocol::function_name<guarded>()) throw std::runtime_error("boom");
    return call_verdict::proceed();
  });
  start();
  auto r = call<guarded>(client_, std::string("a"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), rpc_errc::internal);
  EXPECT_EQ(r.error().message(), "interceptor threw: boom");
  EXPECT_EQ(guarded_runs, 0);
  EXPECT_EQ(call<sum>(client_, 2, 3).value(), 5);
}

TEST_F(Interceptors, TheyCheckAStreamAtItsOpen) {
  server_.add_interceptor([](const call_info& c) {
    return c.stream ? call_verdict::refuse(rpc_errc::permission_denied, "no streams")
                    : call_verdict::proceed();
  });
  start();
  auto [items, err] = corvid::sync_wait(corvid_test::streams::read_count(client_, 3));
  EXPECT_TRUE(items.empty());
  EXPECT_EQ(err.code(), rpc_errc::permission_denied);
  EXPECT_EQ(err.message(), "no streams");
  EXPECT_EQ(call<corvid_test::streams::twice>(client_, 4).value(), 8);
}

TEST_F(Interceptors, TheyAreAddedBeforeStart) {
  start();
  EXPECT_THROW(server_.add_interceptor([](const call_info&) { return call_verdict::proceed(); }),
               std::logic_error);
}

// Observes how each call it let through ended.
struct end_observer : corvid::server_interceptor {
  call_verdict on_call(const call_info& c) override {
    return c.method == corvid::protocol::function_name<guarded>()
               ? call_verdict::refuse(rpc_errc::permission_denied, "no")
               : call_verdict::proceed();
  }
  bool observes_end() const noexcept override { return true; }
  void on_end(const corvid::call_end& e) noexcept override {
    std::lock_guard lk(mutex);
    ends.emplace_back(std::string(e.method), e.status);
    positive.push_back(e.duration.count() > 0);
  }
  std::size_t count() {
    std::lock_guard lk(mutex);
    return ends.size();
  }
  std::mutex mutex;
  std::vector<std::pair<std::string, rpc_errc>> ends;
  std::vector<bool> positive;
};

TEST_F(Interceptors, OneThatObservesEndsHearsEachPassedCallEndOnceWithItsStatus) {
  auto obs = std::make_shared<end_observer>();
  server_.add_interceptor(obs);
  start();
  EXPECT_EQ(call<sum>(client_, 1, 2).value(), 3);
  EXPECT_EQ(call<fails>(client_, 1).error().code(), rpc_errc::handler_error);
  EXPECT_EQ(call<guarded>(client_, std::string("x")).error().code(), rpc_errc::permission_denied);
  // A call its caller gives up on ends cancelled, without a reply.
  auto r = corvid::sync_wait([&]() -> corvid::task<result_t<waits>> {
    co_return co_await client_.call_for<waits>(50ms);
  }());
  EXPECT_EQ(r.error().code(), rpc_errc::timeout);
  ASSERT_TRUE(corvid::test::eventually([&] { return obs->count() == 3; }, 5s));
  std::lock_guard lk(obs->mutex);
  using corvid::protocol::function_name;
  EXPECT_EQ(obs->ends, (std::vector<std::pair<std::string, rpc_errc>>{
                           {std::string(function_name<sum>()), rpc_errc::ok},
                           {std::string(function_name<fails>()), rpc_errc::handler_error},
                           {std::string(function_name<waits>()), rpc_errc::cancelled}}));
  EXPECT_EQ(obs->positive, (std::vector<bool>{true, true, true}));
}

// ---- asynchronous interceptors

// A decision the test hands over by hand: the interceptor's coroutine waits until the test
// calls answer(), from the test's own thread.
struct held_decision {
  struct awaiter {
    held_decision& d;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      std::lock_guard lk(d.mutex);
      d.waiting = h;
    }
    call_verdict await_resume() { return std::move(d.verdict); }
  };
  bool is_waiting() {
    std::lock_guard lk(mutex);
    return static_cast<bool>(waiting);
  }
  void answer(call_verdict v) {
    std::coroutine_handle<> h;
    {
      std::lock_guard lk(mutex);
      verdict = std::move(v);
      h = std::exchange(waiting, {});
    }
    h.resume();  // on this thread: the server hears of it from another thread than its own
  }
  std::mutex mutex;
  std::coroutine_handle<> waiting;
  call_verdict verdict;
};

// Holds the first call of `guarded` until the test answers; decides every other call at once.
struct holding_interceptor : corvid::async_server_interceptor {
  corvid::task<call_verdict> on_call(const call_info& c) override {
    ++calls;
    if (c.method == corvid::protocol::function_name<guarded>() && !held_one.exchange(true))
      co_return co_await held_decision::awaiter{decision};
    if (c.method == corvid::protocol::function_name<sum>())
      co_return call_verdict::refuse(rpc_errc::permission_denied, "async no");
    co_return call_verdict::proceed();
  }
  std::atomic<int> calls{0};
  std::atomic<bool> held_one{false};
  held_decision decision;
};

TEST_F(Interceptors, AnAsyncOneThatAnswersAtOnceCostsNoWait) {
  auto i = std::make_shared<holding_interceptor>();
  i->held_one = true;  // nothing is held
  server_.add_interceptor(i);
  start();
  EXPECT_EQ(call<open_door>(client_, std::string("a")).value(), "open a");
  EXPECT_EQ(call<sum>(client_, 1, 2).error().code(), rpc_errc::permission_denied);
  EXPECT_EQ(call<sum>(client_, 1, 2).error().message(), "async no");
  EXPECT_EQ(i->calls, 3);
}

TEST_F(Interceptors, AnAsyncOneThatWaitsHoldsItsConnectionAndTheRequestsGoOnInOrder) {
  auto i = std::make_shared<holding_interceptor>();
  server_.add_interceptor(i);
  start();
  auto first = send<guarded>(client_, std::string("1"));
  auto second = send<open_door>(client_, std::string("2"));
  ASSERT_TRUE(corvid::test::eventually([&] { return i->decision.is_waiting(); }, 5s));
  // The connection waits on the first request: the second is not even looked at yet.
  EXPECT_EQ(i->calls, 1);
  EXPECT_EQ(guarded_runs, 0);
  // Another connection is not held.
  corvid::rpc_client other;
  connect(other, server_);
  EXPECT_EQ(call<open_door>(other, std::string("3")).value(), "open 3");
  i->decision.answer(call_verdict::proceed());
  EXPECT_EQ(await<guarded>(first).value(), "guarded 1");
  EXPECT_EQ(await<open_door>(second).value(), "open 2");
  EXPECT_EQ(guarded_runs, 1);
}

TEST_F(Interceptors, AnAsyncRefusalAfterAWaitAnswersTheCallAndTheRestGoOn) {
  auto i = std::make_shared<holding_interceptor>();
  server_.add_interceptor(i);
  start();
  auto first = send<guarded>(client_, std::string("1"));
  auto second = send<open_door>(client_, std::string("2"));
  ASSERT_TRUE(corvid::test::eventually([&] { return i->decision.is_waiting(); }, 5s));
  i->decision.answer(call_verdict::refuse(rpc_errc::unauthenticated, "token expired"));
  auto r = await<guarded>(first);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), rpc_errc::unauthenticated);
  EXPECT_EQ(r.error().message(), "token expired");
  EXPECT_EQ(await<open_door>(second).value(), "open 2");
  EXPECT_EQ(guarded_runs, 0);
}

TEST_F(Interceptors, AClientThatLeavesWhileACheckWaitsLeavesTheServerServing) {
  auto i = std::make_shared<holding_interceptor>();
  server_.add_interceptor(i);
  start();
  {
    corvid::rpc_client leaving;
    connect(leaving, server_);
    auto pending = send<guarded>(leaving, std::string("1"));
    ASSERT_TRUE(corvid::test::eventually([&] { return i->decision.is_waiting(); }, 5s));
  }  // closed with the check still waiting
  i->decision.answer(call_verdict::proceed());
  // The paused connection may not have seen the close yet (it reads nothing while it waits):
  // the call may run, and its reply goes nowhere. Either way the server serves on.
  EXPECT_EQ(call<open_door>(client_, std::string("after")).value(), "open after");
}

// Throws from its coroutine, at once for `sum`, after a hand-over for `guarded`.
struct throwing_async : corvid::async_server_interceptor {
  corvid::task<call_verdict> on_call(const call_info& c) override {
    if (c.method == corvid::protocol::function_name<guarded>()) {
      call_verdict v = co_await held_decision::awaiter{decision};
      (void)v;
      throw std::runtime_error("late boom");
    }
    if (c.method == corvid::protocol::function_name<sum>()) throw std::runtime_error("early boom");
    co_return call_verdict::proceed();
  }
  held_decision decision;
};

TEST_F(Interceptors, AnAsyncOneThatThrowsEndsThatCallWithInternal) {
  auto i = std::make_shared<throwing_async>();
  server_.add_interceptor(i);
  start();
  EXPECT_EQ(call<sum>(client_, 1, 1).error().message(), "interceptor threw: early boom");
  auto first = send<guarded>(client_, std::string("1"));
  ASSERT_TRUE(corvid::test::eventually([&] { return i->decision.is_waiting(); }, 5s));
  i->decision.answer(call_verdict::proceed());
  auto r = await<guarded>(first);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), rpc_errc::internal);
  EXPECT_EQ(r.error().message(), "interceptor threw: late boom");
  EXPECT_EQ(call<open_door>(client_, std::string("z")).value(), "open z");
}

}  // namespace
}  // namespace corvid_server_test
