// A W3C trace context travels with calls: the handler sees the caller's trace with a span of
// its own, the calls it makes carry that span as their parent (also after it awaited corvid
// calls, sleeps and a pool's connect), each server exports its spans, and nothing leaks into
// untraced calls that follow on the same threads.
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "background_quiet.hpp"  // pools and balancers end their background work first
#include "connect.hpp"
#include "eventually.hpp"
#include "slowdown.hpp"

namespace corvid {
namespace {

using namespace std::chrono_literals;

// What a handler saw: "<traceparent> <parent span id>", or "untraced".
std::string describe(const request_context& ctx) {
  if (ctx.trace() == nullptr) return "untraced";
  trace_context parent = *ctx.trace();
  parent.span_id = ctx.parent_span_id();
  return ctx.trace()->traceparent() + " parent " + parent.traceparent().substr(36, 16);
}

// ---- the downstream server (B) ----
std::string trace_of(request_context& ctx) { return describe(ctx); }
std::string trace_of_blocking(request_context& ctx) { return describe(ctx); }
int fails(request_context&) { throw std::runtime_error("boom"); }
task<int> lingers(request_context& ctx) {
  co_await ctx.sleep_for(5s);
  co_return 1;
}

// ---- the relaying server (A) ----
rpc_client* downstream = nullptr;              // A's client to B
std::shared_ptr<client_pool> downstream_pool;  // ... and a pool to B, connected lazily

// Calls B after a cancellable sleep, after a call, after a sleep, and through a pool whose
// first call waits for the connect.
task<std::string> relay(request_context& ctx) {
  co_await ctx.sleep_for(1ms);  // resumed by the connection's timer
  std::string out;
  auto first = co_await downstream->call<trace_of>();
  out += first.value_or("error") + "\n";
  auto second = co_await downstream->call<trace_of>();
  out += second.value_or("error") + "\n";
  co_await sleep_for(1ms);
  auto third = co_await downstream->call<trace_of>();
  out += third.value_or("error") + "\n";
  auto pooled = co_await downstream_pool->call<trace_of>();
  out += pooled.value_or("error");
  co_return out;
}
// Calls B through the pool at once: of two such calls in one batch, the first connects the
// pool and the second waits for that connect.
task<std::string> relay_pooled(request_context&) {
  auto r = co_await downstream_pool->call<trace_of>();
  co_return r.value_or("error");
}
// A client-streaming handler: resumed by each item that arrives, then asks B.
task<std::string> upload_then_ask(request_context&, stream_reader<std::string> in) {
  while (auto item = co_await in.next()) {
  }
  auto r = co_await downstream->call<trace_of>();
  co_return r.value_or("error");
}
// Keeps A's only reactor busy until the test lets it go, so that requests sent meanwhile are
// read in one batch.
std::atomic<bool> reactor_held{false}, reactor_released{false};
void hold_reactor() {
  reactor_held = true;
  const auto limit = std::chrono::steady_clock::now() + 20s;  // a test that hung
  while (!reactor_released && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
}
// Names a context of its own for one call.
task<std::string> relay_explicit(request_context&) {
  static const trace_context chosen =
      *trace_context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  auto r = co_await downstream->call_with<trace_of>(
      call_options{.timeout = std::chrono::milliseconds(-1), .attachment = {}, .trace = &chosen});
  co_return r ? r->value : "error";
}

struct span_log {
  std::mutex mutex;
  std::vector<span> spans;
  std::vector<std::string> names;  // span::name is a view: kept here
  span_exporter exporter() {
    return [this](const span& s) {
      std::lock_guard lk(mutex);
      spans.push_back(s);
      names.emplace_back(s.name);
    };
  }
  std::size_t size() {
    std::lock_guard lk(mutex);
    return spans.size();
  }
};

// Polls until `pred` holds (exported spans arrive from the servers' threads).
template <class Pred>
bool settles(Pred pred) {
  return test::eventually(pred, test::patience(5000ms));
}

std::string hex8(const std::array<std::uint8_t, 8>& id) {
  trace_context t;
  t.trace_id[0] = 1;
  t.span_id = id;
  return t.traceparent().substr(36, 16);
}

class trace_propagation : public ::testing::Test {
 protected:
  void SetUp() override {
    server_config cb;
    cb.address = "127.0.0.1";
    cb.io_threads = 1;
    cb.worker_threads = 1;
    cb.on_span = b_spans.exporter();
    b = std::make_unique<rpc_server>(cb);
    b->register_handler<trace_of, fails, lingers>();
    b->register_blocking_handler<trace_of_blocking>();
    ASSERT_FALSE(b->async_start());

    server_config ca = cb;
    ca.on_span = a_spans.exporter();
    a = std::make_unique<rpc_server>(ca);
    a->register_handler<relay, relay_pooled, relay_explicit, hold_reactor, upload_then_ask>();
    ASSERT_FALSE(a->async_start());

    const std::string b_ep = "127.0.0.1:" + std::to_string(b->port());
    down = std::make_unique<rpc_client>();
    ASSERT_FALSE(sync_wait(test::connect(*down, b_ep)));
    downstream = down.get();
    pool_config one;  // so that a second caller waits for the first one's connect
    one.max_connections = 1;
    downstream_pool = client_pool::create(b_ep, one);
    ASSERT_FALSE(sync_wait(test::connect(to_a, "127.0.0.1:" + std::to_string(a->port()))));
    ASSERT_FALSE(sync_wait(test::connect(to_b, b_ep)));
  }
  void TearDown() override {
    downstream = nullptr;
    downstream_pool.reset();
    down.reset();
  }

  template <auto F>
  auto call(rpc_client& c) {
    return sync_wait([&]() -> task<expected<detail::client_result_t<F>, rpc_error>> {
      co_return co_await c.call<F>();
    }());
  }

  span_log a_spans, b_spans;
  std::unique_ptr<rpc_server> b, a;
  std::unique_ptr<rpc_client> down;
  rpc_client to_a, to_b;
};

TEST_F(trace_propagation, a_handler_sees_the_callers_trace_with_its_own_span) {
  const trace_context root = trace_context::new_trace();
  std::string seen;
  {
    trace_scope scope(root);
    seen = call<trace_of>(to_b).value_or("error");
    EXPECT_EQ(current_trace(), &root);  // the call's completion did not change the caller's
  }
  const std::string trace_id = root.traceparent().substr(3, 32);
  EXPECT_EQ(seen.substr(3, 32), trace_id) << seen;
  EXPECT_NE(seen.substr(36, 16), hex8(root.span_id)) << "the server's span is its own";
  EXPECT_EQ(seen.substr(seen.size() - 16), hex8(root.span_id)) << seen;
  ASSERT_TRUE(settles([&] { return b_spans.size() == 1; }));
  const span& s = b_spans.spans[0];
  EXPECT_EQ(s.context.trace_id, root.trace_id);
  EXPECT_EQ(s.parent_span_id, root.span_id);
  EXPECT_EQ(hex8(s.context.span_id), seen.substr(36, 16));
  EXPECT_NE(b_spans.names[0].find("trace_of"), std::string::npos) << b_spans.names[0];
  EXPECT_EQ(s.status, rpc_errc::ok);
  EXPECT_TRUE(s.context.sampled());
}

TEST_F(trace_propagation, calls_made_in_a_handler_are_children_of_its_span_after_every_await) {
  const trace_context root = trace_context::new_trace();
  std::string seen;
  {
    trace_scope scope(root);
    seen = call<relay>(to_a).value_or("error");
  }
  ASSERT_TRUE(settles([&] { return a_spans.size() == 1 && b_spans.size() == 4; }));
  const span& relay_span = a_spans.spans[0];
  EXPECT_EQ(relay_span.parent_span_id, root.span_id);
  EXPECT_EQ(relay_span.context.trace_id, root.trace_id);
  // Each of the four downstream calls: the root's trace, relay's span as the parent.
  std::size_t lines = 0;
  for (std::size_t at = 0; at < seen.size();) {
    const std::size_t end = std::min(seen.find('\n', at), seen.size());
    const std::string line = seen.substr(at, end - at);
    EXPECT_EQ(line.substr(3, 32), root.traceparent().substr(3, 32))
        << "call " << lines << ": " << line;
    EXPECT_EQ(line.substr(line.size() - 16), hex8(relay_span.context.span_id))
        << "call " << lines << ": " << line;
    ++lines;
    at = end + 1;
  }
  EXPECT_EQ(lines, 4u) << seen;
  for (const span& s : b_spans.spans) EXPECT_EQ(s.parent_span_id, relay_span.context.span_id);
}

TEST_F(trace_propagation, calls_waiting_for_a_pools_connect_each_keep_their_own_trace) {
  const trace_context first = trace_context::new_trace(), second = trace_context::new_trace();
  auto send = [&]<auto F>(const trace_context* t) {
    trace_scope scope(t);
    return sync_wait([&]() -> task<async_reply_t<F>> {
      co_return co_await to_a.send_request<F>();
    }());
  };
  reactor_held = reactor_released = false;
  auto held = send.operator()<hold_reactor>(nullptr);
  ASSERT_TRUE(settles([] { return reactor_held.load(); }));
  const auto frames_before = to_a.stats().frames_sent;
  auto r1 = send.operator()<relay_pooled>(&first);
  auto r2 = send.operator()<relay_pooled>(&second);
  // Both requests are in A's socket before its reactor reads again.
  ASSERT_TRUE(settles([&] { return to_a.stats().frames_sent >= frames_before + 2; }));
  reactor_released = true;
  auto get = [](async_reply_t<relay_pooled>& r) {
    return sync_wait([&]() -> task<std::string> {
      auto v = co_await std::move(r);
      co_return v.value_or("error");
    }());
  };
  const std::string seen1 = get(r1), seen2 = get(r2);
  EXPECT_EQ(seen1.substr(3, 32), first.traceparent().substr(3, 32)) << seen1;
  EXPECT_EQ(seen2.substr(3, 32), second.traceparent().substr(3, 32)) << seen2;
}

TEST_F(trace_propagation, a_stream_handler_resumed_by_its_items_keeps_the_trace) {
  const trace_context root = trace_context::new_trace();
  const std::string seen = sync_wait([&]() -> task<std::string> {
    auto opened = [&] {  // the stream's request is made in the scope; no await inside it
      trace_scope scope(root);
      return to_a.open_stream<upload_then_ask>();
    }();
    auto up = co_await std::move(opened);
    if (!up) co_return up.error().message();
    for (int i = 0; i < 3; ++i) {
      // Spaces the items so that the handler waits in next() between them (were they read
      // in one batch, the test would only be weaker).
      co_await sleep_for(5ms);
      if (auto e = co_await up->write("item")) co_return e.message();
    }
    auto r = co_await up->finish();
    co_return r ? *r : r.error().message();
  }());
  EXPECT_EQ(seen.substr(3, 32), root.traceparent().substr(3, 32)) << seen;
}

TEST_F(trace_propagation, untraced_calls_stay_untraced_on_the_same_threads_afterwards) {
  {
    const trace_context root = trace_context::new_trace();
    trace_scope scope(root);
    ASSERT_TRUE(call<relay>(to_a));
  }
  // A and B each run one reactor and one worker, so these run where the traced ones did.
  EXPECT_EQ(current_trace(), nullptr);
  EXPECT_EQ(call<relay>(to_a).value_or("error"), "untraced\nuntraced\nuntraced\nuntraced");
  EXPECT_EQ(call<trace_of>(to_b).value_or("error"), "untraced");
  EXPECT_EQ(call<trace_of_blocking>(to_b).value_or("error"), "untraced");
  // Then traced calls on the same threads: a server exports a span on the thread that ran its
  // call, in order, so any span of the untraced calls would be in before these.
  {
    const trace_context fence = trace_context::new_trace();
    trace_scope scope(fence);
    ASSERT_TRUE(call<relay>(to_a));              // A's reactor, B's reactor: 4 spans
    ASSERT_TRUE(call<trace_of_blocking>(to_b));  // B's worker
  }
  ASSERT_TRUE(settles([&] { return a_spans.size() >= 2 && b_spans.size() >= 9; }));
  EXPECT_EQ(b_spans.size(), 9u) << "untraced calls export no spans";
  EXPECT_EQ(a_spans.size(), 2u);
}

TEST_F(trace_propagation, blocking_handlers_and_explicit_contexts) {
  const trace_context root = trace_context::new_trace(false);
  trace_scope scope(root);
  const std::string blocking = call<trace_of_blocking>(to_b).value_or("error");
  EXPECT_EQ(blocking.substr(3, 32), root.traceparent().substr(3, 32)) << blocking;
  EXPECT_EQ(blocking.substr(53, 2), "00") << "the caller's flags travel";
  // call_options::trace beats the current context.
  const std::string chosen = call<relay_explicit>(to_a).value_or("error");
  EXPECT_EQ(chosen.substr(3, 32), "4bf92f3577b34da6a3ce929d0e0e4736") << chosen;
  EXPECT_EQ(chosen.substr(chosen.size() - 16), "00f067aa0ba902b7") << chosen;
}

TEST_F(trace_propagation, spans_tell_how_calls_ended) {
  const trace_context root = trace_context::new_trace();
  trace_scope scope(root);
  auto failed = call<fails>(to_b);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), rpc_errc::handler_error);
  auto cut = sync_wait([&]() -> task<expected<int, rpc_error>> {
    co_return co_await to_b.call_for<lingers>(50ms);
  }());
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code(), rpc_errc::timeout);
  ASSERT_TRUE(settles([&] { return b_spans.size() == 2; }));
  std::lock_guard lk(b_spans.mutex);
  EXPECT_EQ(b_spans.spans[0].status, rpc_errc::handler_error);
  EXPECT_EQ(b_spans.spans[1].status, rpc_errc::cancelled);  // the client's cancel reached it
  // Ended by the cancel, not by lingers' 5 s.
  EXPECT_GT(b_spans.spans[1].duration, 0ns);
  EXPECT_LT(b_spans.spans[1].duration, 5s);
}

}  // namespace
}  // namespace corvid
