// The steady state of a call allocates nothing: once a connection has warmed up (buffers
// grown, the reactors' frame and handler caches filled), a call of each kind of handler, over
// each transport, makes no heap allocation on the server's reactor threads, nor on the
// client's reactor thread or the calling thread. Counted by this binary's replaced global
// operator new (tests/support/replaced_new.cpp): deterministic, unlike a timing. malloc
// calls that bypass operator new (byte buffers, the frame allocator's own refills, OpenSSL)
// are not counted; their steady state is the pools' business (buffer_pool, frame_allocator).
#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "background_quiet.hpp"  // pools and balancers end their background work first
#include "connect.hpp"
#include "replaced_new.hpp"
#include "test_certs.hpp"

namespace {

// Whose thread an allocation happened on.
enum role : std::uint8_t { other, server_reactor, server_worker, client_reactor, role_count };
thread_local role this_thread_role = other;
std::array<std::atomic<std::uint64_t>, role_count> allocations{};

struct counts {
  std::uint64_t server = 0;  // the server's reactor
  std::uint64_t worker = 0;  // the server's worker threads (blocking handlers)
  std::uint64_t client = 0;  // the client's reactor and every other thread (the caller's)
};
counts now() {
  auto at = [](role r) {
    return allocations[r].load(std::memory_order_relaxed);
  };
  return {at(server_reactor), at(server_worker), at(client_reactor) + at(other)};
}

}  // namespace

bool corvid::test::on_operator_new(std::size_t) noexcept {
  allocations[this_thread_role].fetch_add(1, std::memory_order_relaxed);
  return true;
}

namespace {

using corvid::task;

int add(int a, int b) { return a + b; }
task<int> add_later(int a, int b) { co_return a + b; }
// Runs on a worker thread, which it marks as one (the pool has no thread-start hook).
int add_blocking(int a, int b) {
  this_thread_role = server_worker;
  return a + b;
}
// Echoes the request's attachment as the reply's (a view: nothing copied on the server).
int echo_attachment(corvid::request_context& ctx, int a) {
  ctx.set_response_attachment(ctx.request_attachment());
  return a + 1;
}
// Answers only a call that carries a tenant (call metadata, read where it arrived).
int add_for_tenant(corvid::request_context& ctx, int a, int b) {
  return ctx.metadata().find("tenant") ? a + b : -1;
}
corvid::stream<int> count_to(int n) {
  for (int i = 1; i <= n; ++i) co_yield i;
}

enum class transport { tcp, unix_socket, tls };

const corvid::test::test_certs& certs() {
  static const corvid::test::test_certs c;
  return c;
}

// A server with one reactor, and a client with its own reactor, both counted by role.
class fixture {
 public:
  // `guarded`: an authorization policy admits add_for_tenant only with a bearer token.
  explicit fixture(transport t, bool guarded = false) {
    corvid::server_config cfg;
    cfg.io_threads = 1;
    // Adaptive polling on whatever CPUs the machine has (the default turns it off on one
    // CPU): a polling reactor leaves asio's run loop after each batch of events, the path
    // where operations' memory once stopped being recycled.
    cfg.adaptive_poll = corvid::io_pool::default_adaptive_poll;
    cfg.on_thread_start = [](std::size_t) {
      this_thread_role = server_reactor;
    };
    std::string endpoint;
    if (t == transport::unix_socket) {
      path_ = (std::filesystem::temp_directory_path() /
               ("corvid-allocs-" + std::to_string(::getpid()) + ".sock"))
                  .string();
      std::filesystem::remove(path_);
      cfg.address = "unix:" + path_;
    } else {
      cfg.address = "127.0.0.1";
    }
    server_ = std::make_unique<corvid::rpc_server>(std::move(cfg));
    server_->register_handler<add, add_later, echo_attachment, count_to, add_for_tenant>();
    if (guarded) {
      auto policy = std::make_shared<corvid::authorization_policy>();
      policy->allow(std::string(corvid::protocol::function_name<add_for_tenant>()),
                    corvid::principals().bearer_token("steady-token"));
      server_->add_interceptor(policy);
    }
    server_->register_blocking_handler<add_blocking>();
    if (t == transport::tls) {
      auto e = server_->init_tls(
          {.certificate_chain_file = certs().server_cert, .private_key_file = certs().server_key});
      if (e) throw std::runtime_error(e.message());
    }
    if (auto e = server_->async_start()) throw std::runtime_error(e.message());
    if (t == transport::unix_socket) {
      endpoint = "unix:" + path_;
    } else {
      endpoint =
          (t == transport::tls ? "localhost:" : "127.0.0.1:") + std::to_string(server_->port());
    }
    pool_ = std::make_unique<corvid::io_pool>(
        1, [](std::size_t) { this_thread_role = client_reactor; }, std::chrono::nanoseconds{},
        corvid::io_pool::default_adaptive_poll);
    corvid::client_config cc;
    cc.pool = pool_.get();
    client_ = std::make_unique<corvid::rpc_client>(cc);
    if (t == transport::tls) {
      if (auto e = client_->init_tls({.ca_file = certs().ca}))
        throw std::runtime_error(e.message());
    }
    if (auto e = corvid::sync_wait(corvid::test::connect(*client_, endpoint)))
      throw std::runtime_error(e.message());
    endpoint_ = endpoint;
    tls_ = t == transport::tls;
  }
  // A client_pool to the same server, its connections on the client's reactor.
  std::shared_ptr<corvid::client_pool> make_pool() {
    corvid::pool_config pc;
    pc.client.pool = pool_.get();
    if (tls_) pc.client.tls = corvid::tls_config{.ca_file = certs().ca};
    return corvid::client_pool::create(endpoint_, pc);
  }
  // A load_balancer over that one server, its pool's connections on the client's reactor.
  std::shared_ptr<corvid::load_balancer> make_balancer() {
    corvid::lb_config lc;
    lc.pool.client.pool = pool_.get();
    if (tls_) lc.pool.client.tls = corvid::tls_config{.ca_file = certs().ca};
    lc.follow_health = false;  // no health watch beside the calls: only the calls are counted
    return corvid::load_balancer::create({{endpoint_}}, lc);
  }
  ~fixture() {
    client_.reset();
    server_->stop();
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  corvid::rpc_client& client() { return *client_; }

 private:
  std::string path_;
  std::string endpoint_;
  bool tls_ = false;
  std::unique_ptr<corvid::rpc_server> server_;
  std::unique_ptr<corvid::io_pool> pool_;
  std::unique_ptr<corvid::rpc_client> client_;
};

// `calls` calls of F(i, 1), one at a time; false at the first wrong answer or error.
template <auto F>
task<bool> call_each(corvid::rpc_client& c, int calls) {
  for (int i = 0; i < calls; ++i) {
    auto r = co_await c.call<F>(i, 1);
    if (!r || *r != i + 1) co_return false;
  }
  co_return true;
}

// The same through a pool or a balancer: the first call of each run comes from this thread
// (their locked paths), the others from the client's reactor, where the call resumed (the
// lock-free ones).
template <class Via>
task<bool> shared_call_each(Via& via, int calls) {
  for (int i = 0; i < calls; ++i) {
    auto r = co_await via.template call<add>(i, 1);
    if (!r || *r != i + 1) co_return false;
  }
  co_return true;
}

// `calls` calls of echo_attachment(i) with a 128-byte attachment, echoed back.
task<bool> call_each_with_attachment(corvid::rpc_client& c, int calls) {
  static const std::string attachment(128, 'a');
  for (int i = 0; i < calls; ++i) {
    auto r = co_await c.call_with_attachment<echo_attachment>(attachment, i);
    if (!r || r->value != i + 1 || r->attachment != attachment) co_return false;
  }
  co_return true;
}

// `calls` calls of add_for_tenant(i, 1) with two metadata entries (a bearer token, a tenant).
task<bool> call_each_with_metadata(corvid::rpc_client& c, int calls) {
  static const corvid::metadata md{{"authorization", "Bearer steady-token"}, {"tenant", "acme"}};
  corvid::call_options o;
  o.metadata = &md;
  for (int i = 0; i < calls; ++i) {
    auto r = co_await c.call_with<add_for_tenant>(o, i, 1);
    if (!r || r->value != i + 1) co_return false;
  }
  co_return true;
}

// `calls` streams of count_to(3), each read to its end.
task<bool> stream_each(corvid::rpc_client& c, int calls) {
  for (int i = 0; i < calls; ++i) {
    auto s = co_await c.stream<count_to>(3);
    int n = 0;
    while (auto v = co_await s->next()) {
      if (*v != ++n) co_return false;
    }
    if (n != 3 || s->error()) co_return false;
  }
  co_return true;
}

constexpr int warm_up_calls = 200;
constexpr int measured_calls = 1000;

// The allocations `run(calls)` makes, measured after a warm-up of the same calls.
template <class Run>
counts steady_state(Run run) {
  EXPECT_TRUE(corvid::sync_wait(run(warm_up_calls)));
  const counts before = now();
  EXPECT_TRUE(corvid::sync_wait(run(measured_calls)));
  const counts after = now();
  return {after.server - before.server, after.worker - before.worker, after.client - before.client};
}

class steady_state_allocations : public ::testing::TestWithParam<transport> {};

TEST_P(steady_state_allocations, a_plain_handler_call_allocates_nothing) {
  fixture f(GetParam());
  const counts n = steady_state([&](int k) { return call_each<add>(f.client(), k); });
  EXPECT_EQ(n.server, 0u) << "server allocations in " << measured_calls << " calls";
  EXPECT_EQ(n.client, 0u) << "client allocations in " << measured_calls << " calls";
}

TEST_P(steady_state_allocations, a_coroutine_handler_call_allocates_nothing) {
  fixture f(GetParam());
  const counts n = steady_state([&](int k) { return call_each<add_later>(f.client(), k); });
  EXPECT_EQ(n.server, 0u) << "server allocations in " << measured_calls << " calls";
  EXPECT_EQ(n.client, 0u) << "client allocations in " << measured_calls << " calls";
}

TEST_P(steady_state_allocations, a_blocking_handler_call_allocates_nothing) {
  fixture f(GetParam());
  const counts n = steady_state([&](int k) { return call_each<add_blocking>(f.client(), k); });
  EXPECT_EQ(n.server, 0u) << "server allocations in " << measured_calls << " calls";
  // The worker posts each call back to the reactor: that post's memory is recycled too.
  EXPECT_EQ(n.worker, 0u) << "worker allocations in " << measured_calls << " calls";
  EXPECT_EQ(n.client, 0u) << "client allocations in " << measured_calls << " calls";
}

// The pool's call path (its published snapshot, the lease it hands out) allocates nothing.
TEST_P(steady_state_allocations, a_call_through_a_client_pool_allocates_nothing) {
  fixture f(GetParam());
  auto pool = f.make_pool();
  const counts n = steady_state([&](int calls) { return shared_call_each(*pool, calls); });
  EXPECT_EQ(n.server, 0u) << "server allocations in " << measured_calls << " calls";
  EXPECT_EQ(n.client, 0u) << "client allocations in " << measured_calls << " calls";
}

// The balancer's call path (its coroutine frame, the reactor's hold on the view, the pick,
// the pool's call under it) allocates nothing.
TEST_P(steady_state_allocations, a_call_through_a_load_balancer_allocates_nothing) {
  fixture f(GetParam());
  auto lb = f.make_balancer();
  const counts n = steady_state([&](int calls) { return shared_call_each(*lb, calls); });
  EXPECT_EQ(n.server, 0u) << "server allocations in " << measured_calls << " calls";
  EXPECT_EQ(n.client, 0u) << "client allocations in " << measured_calls << " calls";
}

// The client hands each reply's attachment to its caller as a std::string it owns
// (with_attachment<R>::attachment): one allocation per call once it is longer than the
// string's inline buffer, by design. Nothing else on either side allocates.
TEST_P(steady_state_allocations, attachments_cost_the_client_one_allocation_per_reply) {
  fixture f(GetParam());
  const counts n = steady_state([&](int k) { return call_each_with_attachment(f.client(), k); });
  EXPECT_EQ(n.server, 0u) << "server allocations in " << measured_calls << " calls";
  EXPECT_EQ(n.client, std::uint64_t{measured_calls})
      << "client allocations in " << measured_calls << " calls";
}

// Call metadata is read where it arrived, and the authorization policy's check allocates
// nothing: a guarded call with metadata costs no allocation on either side.
TEST_P(steady_state_allocations,
       a_call_with_metadata_through_an_authorization_policy_allocates_nothing) {
  fixture f(GetParam(), true);
  const counts n = steady_state([&](int k) { return call_each_with_metadata(f.client(), k); });
  EXPECT_EQ(n.server, 0u) << "server allocations in " << measured_calls << " calls";
  EXPECT_EQ(n.client, 0u) << "client allocations in " << measured_calls << " calls";
}

TEST_P(steady_state_allocations, a_stream_call_allocates_nothing) {
  fixture f(GetParam());
  const counts n = steady_state([&](int k) { return stream_each(f.client(), k); });
  EXPECT_EQ(n.server, 0u) << "server allocations in " << measured_calls << " streams";
  EXPECT_EQ(n.client, 0u) << "client allocations in " << measured_calls << " streams";
}

INSTANTIATE_TEST_SUITE_P(transports, steady_state_allocations,
                         ::testing::Values(transport::tcp, transport::unix_socket, transport::tls),
                         [](const auto& p) {
                           switch (p.param) {
                             case transport::tcp:
                               return std::string("tcp");
                             case transport::unix_socket:
                               return std::string("unix_socket");
                             case transport::tls:
                               return std::string("tls");
                           }
                           return std::string("unknown");
                         });

}  // namespace
