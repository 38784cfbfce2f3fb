// Blocking handlers (rpc_server::register_blocking_handler) run on the worker pool: they do
// not stall their reactor, their queue is bounded, cancellation and deadlines reach them,
// and connection close and stop() find them running or queued.
#include <atomic>
#include <dirent.h>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "server_test_support.hpp"

namespace corvid_server_test {
namespace {

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
int quick() { return 1; }
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

using ms = std::chrono::milliseconds;

// How long a fast call, and a protocol ping, on other connections take while `nap(200)`
// runs for a first one, all on one reactor.
std::pair<ms, ms> fast_call_and_ping_beside_nap(corvid::rpc_server& s, bool ping_first) {
  corvid::rpc_client a, b;
  connect(a, s);
  connect(b, s);
  raw_connection raw(s.port());
  EXPECT_TRUE(call<quick>(b));  // b's connection is up and served
  raw.send_ping(1);
  EXPECT_TRUE(raw.read_frame());  // so is the raw one
  auto slow = send<nap>(a, 200);
  EXPECT_TRUE(eventually([] { return started == 1; }));
  auto time = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration_cast<ms>(std::chrono::steady_clock::now() - t0);
  };
  auto fast_call = [&] {
    auto r = call<quick>(b);
    EXPECT_TRUE(r) << r.error().message();
  };
  auto ping = [&] {
    raw.send_ping(2);
    auto pong = raw.read_frame();
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->header.type, corvid::protocol::msg_type::pong);
  };
  // Whichever goes first waits out the nap on the reactor, the other then finds it free.
  ms call_took{}, ping_took{};
  if (ping_first) {
    ping_took = time(ping);
    call_took = time(fast_call);
  } else {
    call_took = time(fast_call);
    ping_took = time(ping);
  }
  auto n = await<nap>(slow);
  EXPECT_TRUE(n && *n == 200);
  return {call_took, ping_took};
}

TEST(BlockingHandler, DoesNotStallItsReactor) {
  auto cfg = loopback_config(1);  // one reactor for every connection
  cfg.worker_threads = 2;
  auto s = blocking_server(cfg);
  auto [call_took, ping_took] = fast_call_and_ping_beside_nap(*s, false);
  ::testing::Test::RecordProperty("fast_call_ms", static_cast<int>(call_took.count()));
  ::testing::Test::RecordProperty("ping_ms", static_cast<int>(ping_took.count()));
  EXPECT_LT(call_took, corvid::test::patience(50ms)) << call_took.count() << " ms";
  EXPECT_LT(ping_took, corvid::test::patience(50ms)) << ping_took.count() << " ms";
}

// The contrast that shows the mechanism: the same handler registered with register_handler
// runs on the reactor, and the fast call (or the ping) on another connection waits for it.
TEST(BlockingHandler, OnTheReactorTheSameHandlerStallsOtherConnections) {
  for (const bool ping_first : {false, true}) {
    reset();
    corvid::rpc_server s(loopback_config(1));
    s.register_handler<nap, quick>();
    ASSERT_FALSE(s.async_start());
    auto [call_took, ping_took] = fast_call_and_ping_beside_nap(s, ping_first);
    ::testing::Test::RecordProperty(ping_first ? "ping_ms" : "fast_call_ms",
                                    static_cast<int>((ping_first ? ping_took : call_took).count()));
    EXPECT_GT(ping_first ? ping_took : call_took, 150ms)
        << (ping_first ? "ping " : "call ") << (ping_first ? ping_took : call_took).count()
        << " ms";
  }
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
  ASSERT_TRUE(eventually([&] {
    return s->metrics_text().find("\ncorvid_server_worker_queue_depth 1") != std::string::npos;
  }));
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
  ASSERT_TRUE(eventually([&] {
    return s->metrics_text().find("\ncorvid_server_worker_queue_depth 1") != std::string::npos;
  }));
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
  std::this_thread::sleep_for(150ms);
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
  std::this_thread::sleep_for(50ms);  // written and queued for the worker
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
