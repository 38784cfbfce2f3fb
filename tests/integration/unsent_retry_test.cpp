// Requests that never left the client: when their connection breaks they fail with
// request_unsent() set, and client_pool retries them once on a fresh connection.
#include <atomic>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "background_quiet.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

std::atomic<int> reactors_blocked{0};
// Blocks the server's only reactor for `ms`, so it stops reading and the client's writes back
// up.
int block_reactor(int ms) {
  ++reactors_blocked;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}

// Bytes waiting in the receive queues of the TCP sockets bound to local `port` (the server's
// side of its connections), from /proc/net/tcp: what reached the server's kernel unread.
std::size_t unread_at(std::uint16_t port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // the column names
  std::size_t total = 0;
  while (std::getline(tcp, line)) {
    // "  sl  local_address rem_address   st tx_queue:rx_queue ...", addresses as HEXIP:HEXPORT
    std::istringstream in(line);
    std::string sl, local, remote, st, queues;
    in >> sl >> local >> remote >> st >> queues;
    const auto colon = local.find(':');
    if (colon == std::string::npos || std::stoul(local.substr(colon + 1), nullptr, 16) != port) {
      continue;
    }
    total += std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16);
  }
  return total;
}
std::size_t sink(corvid::request_context& ctx) { return ctx.request_attachment().size(); }

class stalling_server {
 public:
  stalling_server() : server_(make_config()) {
    server_.register_handler<block_reactor, sink, echo>();
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  static corvid::server_config make_config() {
    auto c = test_server::make_config();
    c.io_threads = 1;
    return c;
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  std::uint16_t port() const { return server_.port(); }

 private:
  corvid::rpc_server server_;
};

// Stalls `c`'s socket to `port`: the server's reactor sleeps, then a request far larger than
// the socket buffers is written and sticks. Returns the replies of the two stalled calls.
struct stalled {
  corvid::async_reply_t<block_reactor> blocker;
  corvid::async_reply<corvid::detail::call_state<std::size_t, true>> big;
};
corvid::task<stalled> stall(corvid::rpc_client& c, std::uint16_t port, const std::string& big) {
  reactors_blocked = 0;
  auto b = co_await c.send_request<block_reactor>(1500);
  // Polls (this coroutine's own reactor must stay free) until the server read it and blocks,
  // then until part of the big request is in the server's kernel.
  const auto until = [](auto pred) -> corvid::task<void> {
    const auto limit = std::chrono::steady_clock::now() + 20s;  // a test that hung
    while (!pred() && std::chrono::steady_clock::now() < limit) co_await corvid::sleep_for(1ms);
  };
  co_await until([] { return reactors_blocked == 1; });
  auto g = co_await c.send_request_with<sink>(corvid::call_options{0ms, big});
  co_await until([port] { return unread_at(port) > 0; });
  co_return stalled{std::move(b), std::move(g)};
}

// Two calls from reactor 0 of `reactors`: the pool's snapshot then knows what the server
// stated, and a caller there takes the fast path.
void warm_up(corvid::client_pool& pool, corvid::io_pool& reactors) {
  corvid::sync_wait([&]() -> corvid::task<void> {
    co_await hop{reactors.at(0)};
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(co_await pool.call<echo>("warm"));
  }());
}

TEST(Unsent, QueuedRequestsBehindAStalledWriteFailAsUnsent) {
  stalling_server s;
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, s.endpoint())));
  const std::string big(32 << 20, 'x');
  corvid::sync_wait([&]() -> corvid::task<void> {
    stalled st = co_await stall(client, s.port(), big);
    std::vector<corvid::async_reply_t<echo>> queued;
    for (int i = 0; i < 5; ++i) queued.push_back(co_await client.send_request<echo>("q"));
    client.close();
    for (auto& q : queued) {
      auto r = co_await std::move(q);
      EXPECT_FALSE(r);
      if (r) continue;
      EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
      EXPECT_TRUE(r.error().request_unsent()) << r.error().message();
    }
    // The server has (part of) these: possibly executed, so not marked unsent.
    auto g = co_await std::move(st.big);
    EXPECT_FALSE(g);
    if (!g) {
      EXPECT_FALSE(g.error().request_unsent());
    }
    auto b = co_await std::move(st.blocker);
    EXPECT_FALSE(b);
    if (!b) {
      EXPECT_FALSE(b.error().request_unsent());
    }
  }());
}

TEST(Unsent, ACallOnAClosedClientIsUnsent) {
  corvid::rpc_client client;  // never connected
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
        co_return co_await client.call<echo>("nobody");
      }());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
  EXPECT_TRUE(r.error().request_unsent());
}

TEST(Unsent, PoolRetriesUnsentCallsOnceOnAFreshConnection) {
  stalling_server s;
  corvid::pool_config cfg;
  cfg.max_connections = 1;
  auto pool = corvid::client_pool::create(s.endpoint(), cfg);
  const std::string big(32 << 20, 'x');
  auto lease = corvid::sync_wait(pool->acquire());
  ASSERT_TRUE(lease) << lease.error().message();
  auto first = lease->client;
  stalled st = corvid::sync_wait(stall(*first, s.port(), big));

  // Callers on other threads queue behind the stalled write on the pool's one connection.
  constexpr int callers = 8;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < callers; ++i) {
    threads.emplace_back([&, i] {
      auto r = corvid::sync_wait(pool->call<echo>("retry-" + std::to_string(i)));
      if (r && *r == "retry-" + std::to_string(i)) ++ok;
    });
  }
  ASSERT_TRUE(eventually([&] { return first->pending_calls() == 2 + callers; }));
  first->close();  // the connection breaks with their bytes still queued
  lease = {};
  first.reset();
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), callers);
  EXPECT_EQ(pool->stats().retried_unsent, static_cast<std::size_t>(callers));
  EXPECT_EQ(pool->stats().connect_attempts, 2u);
  // The stalled calls had reached the server: they fail, they are not retried.
  auto g = corvid::sync_wait([&]() -> corvid::task<bool> {
    auto r = co_await std::move(st.big);
    co_return !r && r.error().code() == corvid::rpc_errc::connection_closed;
  }());
  EXPECT_TRUE(g);
}

// A pool of one connection on one reactor, its connection stalled as above; callers on that
// reactor queue calls behind the stalled write.
class UnsentOnReactor : public ::testing::Test {
 protected:
  void SetUp() override {
    corvid::pool_config cfg;
    cfg.max_connections = 1;
    cfg.client.pool = &reactors_;
    pool_ = corvid::client_pool::create(server_.endpoint(), cfg);
    auto lease = corvid::sync_wait(pool_->acquire());
    ASSERT_TRUE(lease) << lease.error().message();
    first_ = lease->client;
    warm_up(*pool_, reactors_);
    stalled_.emplace(corvid::sync_wait(stall(*first_, server_.port(), big_)));
  }
  void TearDown() override {
    if (stalled_) {
      corvid::sync_wait([&]() -> corvid::task<void> {
        (void)co_await std::move(stalled_->big);
      }());
    }
    first_.reset();
    pool_.reset();
    reactors_.stop();
  }
  // `n` callers on the connection's reactor, each calling echo("<prefix><i>") and handing the
  // result to `check`; returns once all are queued, having checked that each call started on
  // the connection before it was awaited (the fast path).
  template <class Check>
  void start_callers(int n, std::string prefix, Check check) {
    // Captures nothing: what the coroutine uses lives in its frame (its parameters, by value).
    auto caller = [](UnsentOnReactor& t, std::string text,
                     Check on_result) -> corvid::detail::detached {
      co_await hop{t.reactors_.at(0)};
      const auto queued = t.first_->pending_calls();
      auto call = t.pool_->call<echo>(text);
      if (t.first_->pending_calls() == queued + 1) ++t.at_once_;
      auto r = co_await std::move(call);
      on_result(text, r);
      ++t.done_;
    };
    for (int i = 0; i < n; ++i) caller(*this, prefix + std::to_string(i), check);
    ASSERT_TRUE(eventually([&] { return first_->pending_calls() == 2u + n; }));
    EXPECT_EQ(at_once_.load(), n);
  }

  stalling_server server_;
  corvid::io_pool reactors_{1};
  std::shared_ptr<corvid::client_pool> pool_;
  std::shared_ptr<corvid::rpc_client> first_;
  const std::string big_ = std::string(32 << 20, 'x');
  std::optional<stalled> stalled_;
  std::atomic<int> at_once_{0}, done_{0};
};

// The same retry as above from callers on the connection's own reactor: their calls start at
// once on it (no coroutine of the pool's in between), and the retry still happens.
TEST_F(UnsentOnReactor, PoolRetriesTheirUnsentCalls) {
  constexpr int callers = 8;
  std::atomic<int> ok{0};
  auto check = [&](const std::string& text, const auto& r) {
    if (r && *r == text) ++ok;
  };
  const auto crossed_before = pool_->stats().cross_reactor_calls;
  start_callers(callers, "retry-", check);
  EXPECT_EQ(pool_->stats().cross_reactor_calls, crossed_before);
  first_->close();
  ASSERT_TRUE(eventually([&] { return done_ == callers; }, 20s));
  EXPECT_EQ(ok.load(), callers);
  EXPECT_EQ(pool_->stats().retried_unsent, static_cast<std::size_t>(callers));
  EXPECT_TRUE(corvid::sync_wait([&]() -> corvid::task<bool> {
    auto r = co_await std::move(stalled_->big);  // it had reached the server: not retried
    co_return !r && !r.error().request_unsent();
  }()));
  stalled_.reset();
}

// A pool let go while its calls wait unsent on a connection someone else still holds: when
// that connection breaks the calls end with their unsent error (no pool to retry on), none
// hangs and nothing touches the pool that is gone.
TEST_F(UnsentOnReactor, CallsOfAPoolThatIsGoneEndUnsentWithoutARetry) {
  constexpr int callers = 4;
  std::atomic<int> unsent{0};
  auto check = [&](const std::string&, const auto& r) {
    if (!r && r.error().request_unsent()) {
      ++unsent;
    } else {
      ADD_FAILURE() << (r ? "answered: " + *r : r.error().message());
    }
  };
  start_callers(callers, "gone-", check);
  pool_.reset();
  first_->close();
  ASSERT_TRUE(eventually([&] { return done_ == callers; }, 20s));
  EXPECT_EQ(unsent.load(), callers);
}

}  // namespace
}  // namespace corvid_test
