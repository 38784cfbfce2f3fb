// Blocking handlers (rpc_server::register_blocking_handler) run on the worker pool: they do
// not stall their reactor, their queue is bounded, cancellation and deadlines reach them,
// and connection close and stop() find them running or queued.
#include <atomic>
#include <dirent.h>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "server_test_support.hpp"
#include "worker_queue_depth.hpp"

namespace corvid_server_test {
namespace {

using corvid::test::worker_queue_depth;

std::atomic<int> started{0};
std::atomic<int> finished{0};
std::atomic<int> saw_cancel{0};
std::atomic<int> late_runs{0};
std::atomic<bool> gate_open{false};
corvid::rpc_server* stop_target = nullptr;

void reset() {
  started = finished = saw_cancel = late_runs = 0;
  gate_open = false;
}

// Blocks its thread for `ms`, deaf to cancellation.
int nap(int ms) {
  ++started;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  ++finished;
  return ms;
}
std::atomic<int> quick_saw_finished{-1};
// Records how many blocking handlers had finished when it ran.
int quick() {
  quick_saw_finished = finished.load();
  return 1;
}
// Blocks until the gate opens or the call is cancelled (by cancel frame, close or deadline).
int held(corvid::request_context& ctx) {
  ++started;
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (!gate_open && !ctx.cancelled() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  if (ctx.cancelled()) ++saw_cancel;
  ++finished;
  return 7;
}
int late(int x) {
  ++late_runs;
  return x;
}
std::size_t sized(const std::string& s) { return s.size(); }
int broken(int) { throw std::runtime_error("disk on fire"); }
std::string with_attachment(corvid::request_context& ctx, std::string s) {
  ctx.set_response_attachment(std::string(ctx.request_attachment()) + "!");
  return s + " from a worker";
}
void stop_from_inside() { stop_target->stop(); }
struct store {
  int base;
  int get(int x) const { return base + x; }
};

// Worker threads of this process, by the name the pool gives them.
int worker_threads_alive() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  while (dirent* e = ::readdir(d)) {
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "corvid-worker") ++n;
  }
  ::closedir(d);
  return n;
}

std::unique_ptr<corvid::rpc_server> blocking_server(corvid::server_config cfg) {
  reset();
  auto s = std::make_unique<corvid::rpc_server>(std::move(cfg));
  s->register_blocking_handler<nap, held, late, sized, broken, with_attachment>();
  s->register_handler<quick>();
  if (auto ec = s->async_start()) throw std::runtime_error(ec.message());
  return s;
}

corvid::server_config one_worker() {
  auto c = loopback_config();
  c.worker_threads = 1;
  return c;
}

// A blocking handler held on the worker pool while a fast call and a protocol ping arrive on
// other connections of the same (only) reactor.
struct beside_held {
  corvid::rpc_client a, b;
  raw_connection raw;
  std::optional<corvid::async_reply_t<held>> blocked;

  explicit beside_held(corvid::rpc_server& s) : raw(s.port()) {
    connect(a, s);
    connect(b, s);
    EXPECT_TRUE(call<quick>(b));  // b's connection is up and served
    raw.send_ping(1);
    EXPECT_TRUE(raw.read_frame());  // so is the raw one
    quick_saw_finished = -1;
    blocked.emplace(send<held>(a));
    EXPECT_TRUE(eventually([] { return started == 1; }));
  }
  void release() {
    gate_open = true;
    EXPECT_EQ(await<held>(*blocked).value_or(0), 7);
  }
};

TEST(BlockingHandler, DoesNotStallItsReactor) {
  auto cfg = loopback_config(1);  // one reactor for every connection
  cfg.worker_threads = 2;
  auto s = blocking_server(cfg);
  beside_held h(*s);
  // The gate stays closed until release(): both answers come while `held` holds its worker.
  // On the reactor instead, they would wait for held's own 20 s limit and see finished == 1.
  auto r = call<quick>(h.b);
  EXPECT_TRUE(r) << r.error().message();
  EXPECT_EQ(quick_saw_finished, 0) << "the fast call ran only after the blocking one";
  h.raw.send_ping(2);
  auto pong = h.raw.read_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->header.type, corvid::protocol::msg_type::pong);
  EXPECT_EQ(finished, 0) << "the ping was answered only after the blocking handler returned";
  h.release();
}

// The contrast that shows the mechanism: the same handler registered with register_handler
// runs on the reactor, and the fast call and the ping on other connections wait for it.
TEST(BlockingHandler, OnTheReactorTheSameHandlerStallsOtherConnections) {
  reset();
  corvid::rpc_server s(loopback_config(1));
  s.register_handler<held, quick>();
  ASSERT_FALSE(s.async_start());
  beside_held h(s);
  auto fast = send<quick>(h.b);
  h.raw.send_ping(2);
  // The order below holds however late the gate opens; opening it late only gives a free
  // reactor (the bug this contrasts) time to answer first, so that this test would notice.
  std::jthread opener([] {
    std::this_thread::sleep_for(100ms);
    gate_open = true;
  });
  auto pong = h.raw.read_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(finished, 1) << "the ping was answered while the handler held the reactor";
  EXPECT_EQ(await<quick>(fast).value_or(0), 1);
  EXPECT_EQ(quick_saw_finished, 1) << "the fast call ran while the handler held the reactor";
  h.release();
}

TEST(BlockingHandler, AnswersValuesErrorsAttachmentsAndMembers) {
  auto s = blocking_server(loopback_config());
  store st{40};
  corvid::rpc_server members(loopback_config());
  members.register_blocking_handler<&store::get>(&st);
  ASSERT_FALSE(members.async_start());

  corvid::rpc_client c, m;
  connect(c, *s);
  connect(m, members);
  auto v = call<sized>(c, std::string(100'000, 'x'));
  ASSERT_TRUE(v) << v.error().message();
  EXPECT_EQ(*v, 100'000u);
  auto e = call<broken>(c, 1);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code(), corvid::rpc_errc::handler_error);
  EXPECT_NE(e.error().message().find("disk on fire"), std::string::npos);
  auto a = corvid::sync_wait(
      [&]() -> corvid::task<
                corvid::expected<corvid::with_attachment<std::string>, corvid::rpc_error>> {
        co_return co_await c.call_with_attachment<with_attachment>("att", std::string("hi"));
      }());
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->value, "hi from a worker");
  EXPECT_EQ(a->attachment, "att!");
  auto g = call<&store::get>(m, 2);
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(*g, 42);
}

TEST(BlockingHandler, QueueFullByLengthIsServerBusy) {
  auto cfg = one_worker();
  cfg.worker_queue_length = 1;
  auto s = blocking_server(cfg);
  // Three connections: one connection's share of a queue of one is one call (a second would
  // wait in its socket, not be refused), so the queue fills with others' calls.
  corvid::rpc_client c, d, e;
  connect(c, *s);
  connect(d, *s);
  connect(e, *s);
  auto running = send<held>(c);
  ASSERT_TRUE(eventually([] { return started == 1; }));
  auto queued = send<held>(d);  // the queue's one place
  ASSERT_TRUE(eventually([&] { return worker_queue_depth(*s) == 1; }));
  auto refused = call<held>(e);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), corvid::rpc_errc::server_busy);
  EXPECT_NE(refused.error().message().find("worker queue is full"), std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("worker_queue_length = 1"), std::string::npos);
  gate_open = true;
  EXPECT_EQ(await<held>(running).value_or(0), 7);
  EXPECT_EQ(await<held>(queued).value_or(0), 7);
  EXPECT_EQ(started, 2);
}

TEST(BlockingHandler, QueueFullByBytesIsServerBusy) {
  auto cfg = one_worker();
  cfg.worker_queue_bytes = 4096;
  auto s = blocking_server(cfg);
  // One connection each: one connection's share of the bytes is an eighth (a second call of
  // its own past that would wait in its socket, not be refused).
  corvid::rpc_client c, d, e;
  connect(c, *s);
  connect(d, *s);
  connect(e, *s);
  auto running = send<held>(c);
  ASSERT_TRUE(eventually([] { return started == 1; }));
  auto big = send<sized>(d, std::string(8000, 'x'));  // fits the empty queue
  ASSERT_TRUE(eventually([&] { return worker_queue_depth(*s) == 1; }));
  auto refused = call<sized>(e, std::string("small"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), corvid::rpc_errc::server_busy);
  EXPECT_NE(refused.error().message().find("worker_queue_bytes = 4096"), std::string::npos)
      << refused.error().message();
  gate_open = true;
  EXPECT_EQ(await<held>(running).value_or(0), 7);
  EXPECT_EQ(await<sized>(big).value_or(0), 8000u);
}

TEST(BlockingHandler, DeadlinePassedInTheQueueIsTimeoutAndNeverRuns) {
  auto s = blocking_server(one_worker());
  corvid::rpc_client c;
  connect(c, *s);
  auto running = send<held>(c);
  ASSERT_TRUE(eventually([] { return started == 1; }));
  // A caller that sends no cancel frame: only the deadline in its header says it gave up.
  raw_connection raw(s->port());
  raw.send_request<late>(1, /*timeout_ms*/ 50, 5);
  ASSERT_TRUE(eventually([&] { return worker_queue_depth(*s) == 1; }));
  // About time: the call's 50 ms deadline must pass while it waits in the queue.
  std::this_thread::sleep_for(100ms);
  gate_open = true;
  auto f = raw.read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header.request_id, 1u);
  EXPECT_EQ(f->header.status, corvid::rpc_errc::timeout);
  EXPECT_NE(f->message().find("waited"), std::string::npos) << f->message();
  EXPECT_EQ(late_runs, 0);
  EXPECT_EQ(await<held>(running).value_or(0), 7);
  // With time to spare it runs.
  raw.send_request<late>(2, 5000, 5);
  auto ok = raw.read_frame();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->header.status, corvid::rpc_errc::ok);
  EXPECT_EQ(late_runs, 1);
}

TEST(BlockingHandler, CancelledInTheQueueNeverRuns) {
  auto s = blocking_server(one_worker());
  corvid::rpc_client c;
  connect(c, *s);
  auto running = send<held>(c);
  ASSERT_TRUE(eventually([] { return started == 1; }));
  auto queued = send<late>(c, 1);
  // read and queued for the worker
  ASSERT_TRUE(eventually([&] { return worker_queue_depth(*s) == 1; }));
  queued.cancel();
  ASSERT_TRUE(eventually([&] { return s->stats().calls_cancelled == 1; }));
  gate_open = true;
  EXPECT_EQ(await<held>(running).value_or(0), 7);
  EXPECT_TRUE(call<quick>(c));  // the queue has been worked through: late came before
  EXPECT_TRUE(call<late>(c, 2));
  EXPECT_EQ(late_runs, 1);  // only the second
}

TEST(BlockingHandler, CancelFrameReachesARunningHandler) {
  auto s = blocking_server(loopback_config());
  corvid::rpc_client c;
  connect(c, *s);
  auto r = send<held>(c);
  ASSERT_TRUE(eventually([] { return started == 1; }));
  r.cancel();
  EXPECT_TRUE(eventually([] { return saw_cancel == 1; }));
  EXPECT_FALSE(gate_open);
}

TEST(BlockingHandler, DeadlineReachesARunningHandler) {
  auto s = blocking_server(loopback_config());
  corvid::client_config cc;
  cc.send_cancel = false;  // no cancel frame: the deadline alone must reach ctx.cancelled()
  corvid::rpc_client c(cc);
  connect(c, *s);
  auto r = corvid::sync_wait([&]() -> corvid::task<result_t<held>> {
    co_return co_await c.call_for<held>(100ms);
  }());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::timeout);
  EXPECT_TRUE(eventually([] { return saw_cancel == 1; }));
}

TEST(BlockingHandler, ConnectionClosedWhileRunning) {
  auto s = blocking_server(loopback_config());
  {
    corvid::rpc_client c;
    connect(c, *s);
    auto polls = send<held>(c);
    auto deaf = send<nap>(c, 100);  // keeps running after the close; its reply is dropped
    ASSERT_TRUE(eventually([] { return started == 2; }));
    c.close();
  }
  EXPECT_TRUE(eventually([] { return saw_cancel == 1; }));
  EXPECT_TRUE(eventually([] { return finished == 2; }));
  EXPECT_TRUE(eventually([&] { return s->connection_count() == 0; }));
  corvid::rpc_client other;
  connect(other, *s);
  EXPECT_EQ(call<nap>(other, 1).value_or(0), 1);
}

TEST(BlockingHandler, StopWaitsForRunningAndAnswersQueuedCalls) {
  auto s = blocking_server(one_worker());
  corvid::rpc_client c;
  connect(c, *s);
  auto first = send<nap>(c, 150);
  auto second = send<nap>(c, 50);  // queued behind it
  ASSERT_TRUE(eventually([] { return started == 1; }));
  // Both read by the server (counted after their batch is dispatched): stop() stops reading,
  // so a request still on its way would end with connection_closed instead.
  ASSERT_TRUE(eventually([&] { return s->stats().frames_received >= 2; }));
  s->stop();
  EXPECT_EQ(finished, 2);  // stop() returned only after both ran
  EXPECT_EQ(await<nap>(first).value_or(0), 150);
  EXPECT_EQ(await<nap>(second).value_or(0), 50);
  EXPECT_EQ(worker_threads_alive(), 0);  // joined
}

TEST(BlockingHandler, StopPastItsTimeoutDropsQueuedCalls) {
  auto cfg = one_worker();
  cfg.stop_timeout = 50ms;
  auto s = blocking_server(cfg);
  corvid::rpc_client c;
  connect(c, *s);
  auto running = send<nap>(c, 300);
  auto queued = send<late>(c, 1);
  ASSERT_TRUE(eventually([] { return started == 1; }));
  s->stop();
  EXPECT_EQ(finished, 1);   // the running handler finished before stop() returned
  EXPECT_EQ(late_runs, 0);  // the queued one was cancelled by the close, never ran
  auto r = await<late>(queued);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
  s.reset();
}

TEST(BlockingHandler, StopFromInsideABlockingHandlerOnlyBeginsIt) {
  reset();
  corvid::rpc_server s(loopback_config());
  stop_target = &s;
  s.register_blocking_handler<stop_from_inside>();
  ASSERT_FALSE(s.async_start());
  corvid::rpc_client c;
  connect(c, s);
  EXPECT_TRUE(call<stop_from_inside>(c));  // answered: the stop drains it
  s.stop();                                // completes the stop
  stop_target = nullptr;
}

TEST(BlockingHandler, WorkerThreadsOnlyWithBlockingHandlersAndJoinedAtStop) {
  const int before = worker_threads_alive();
  {
    corvid::rpc_server plain(loopback_config());
    plain.register_handler<quick>();
    ASSERT_FALSE(plain.async_start());
    EXPECT_EQ(worker_threads_alive(), before);
  }
  auto cfg = loopback_config();
  cfg.worker_threads = 3;
  auto s = blocking_server(cfg);
  EXPECT_EQ(worker_threads_alive(), before + 3);
  s->stop();
  EXPECT_EQ(worker_threads_alive(), before);
}

}  // namespace
}  // namespace corvid_server_test
