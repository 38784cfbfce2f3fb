// `corvid-bench auth`: what call metadata, interceptors and refusals cost. One server (one io
// thread) and one client (one io thread) in this process, pinned to different cores, C
// callers making 128 B calls for --duration seconds per row; a fresh server per row, rows
// interleaved over --rounds rounds (median calls/s). Modes (--auth-mode picks one):
//   plain        no metadata, no interceptor: the untagged path
//   metadata     the calls carry 2 entries (authorization: Bearer <40 chars>, tenant: acme)
//   interceptor  one synchronous server interceptor that lets every call through
//   policy       an authorization_policy allowing "*" for that bearer token; calls as metadata
//   async        one asynchronous server interceptor whose task answers at once
//   refused      every call refused by a synchronous interceptor (permission_denied)
//   not-found    every call to a function id the server never registered
// Allocations per call are counted on the server's and on the client's reactor thread.
// `corvid-bench auth-server --listen ADDR --auth-mode M` serves one mode alone, and
// `corvid-bench auth --connect ADDR --auth-mode M` is its client (bench/callgrind-auth).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <corvid/corvid.hpp>

#include "alloc_counter.hpp"
#include "bench_service.hpp"
#include "experiments.hpp"
#include "harness.hpp"
#include "report.hpp"

namespace corvid::bench {
namespace {

// Never registered: calls to it are answered function_not_found.
void auth_unregistered(request_context& ctx, std::uint32_t response_size, bool echo) {
  (void)ctx;
  (void)response_size;
  (void)echo;
}

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

const std::vector<std::string> all_modes{"plain", "metadata", "interceptor", "policy",
                                         "async", "refused",  "not-found"};
// 40 characters, as a typical opaque token.
constexpr std::string_view token = "k3J9xQ2mV8pL5wR7tY1uZ4aB6cD0eF2gH8iJ5kL3";

bool sends_metadata(const std::string& mode) { return mode == "metadata" || mode == "policy"; }
rpc_errc expected_outcome(const std::string& mode) {
  if (mode == "refused") return rpc_errc::permission_denied;
  if (mode == "not-found") return rpc_errc::function_not_found;
  return rpc_errc::ok;
}

struct pass_through final : server_interceptor {
  call_verdict on_call(const call_info&) override { return call_verdict::proceed(); }
};
struct refuse_all final : server_interceptor {
  call_verdict on_call(const call_info&) override {
    return call_verdict::refuse_static(rpc_errc::permission_denied, "not allowed");
  }
};
struct async_pass_through final : async_server_interceptor {
  task<call_verdict> on_call(const call_info&) override { co_return call_verdict::proceed(); }
};

std::unique_ptr<rpc_server> start_auth_server(const std::string& mode, const std::string& listen,
                                              const options& o) {
  server_config cfg;
  cfg.io_threads = 1;
  cfg.adaptive_poll = o.adaptive_poll;
  cfg.busy_poll = o.busy_poll;
  const auto colon = listen.rfind(':');
  cfg.address = listen.substr(0, colon);
  cfg.port = static_cast<std::uint16_t>(std::atoi(listen.substr(colon + 1).c_str()));
  cfg.on_thread_start = [pin = o.pin](std::size_t) {
    if (pin) pin_to_cpu(0);
    track_this_thread();
  };
  auto server = std::make_unique<rpc_server>(cfg);
  register_bench_service(*server);
  if (mode == "interceptor") server->add_interceptor(std::make_shared<pass_through>());
  if (mode == "async") server->add_interceptor(std::make_shared<async_pass_through>());
  if (mode == "refused") server->add_interceptor(std::make_shared<refuse_all>());
  if (mode == "policy") {
    auto policy = std::make_shared<authorization_policy>();
    policy->allow("*", principals().bearer_token(std::string(token)));
    server->add_interceptor(policy);
  }
  if (auto e = server->async_start()) throw std::runtime_error("server: " + e.message());
  return server;
}

struct load_result {
  std::uint64_t calls = 0;
  std::uint64_t unexpected = 0;  // calls whose outcome was not the mode's
  std::string first_unexpected;
  double seconds = 0;
};

struct shared_load {
  const std::string* mode;
  const call_options* opts;
  steady::time_point end;
  std::mutex m;
  load_result out;
  std::atomic<int> left{0};
};

// One call, its result kept in a frame of its own: g++ 12 destroys a co_await's result twice
// when it lives in a branch inside the caller's loop (seen at -O1).
template <auto F>
task<rpc_error> one_call(rpc_client& c, const call_options& opts) {
  auto r = co_await c.call_with<F>(opts, std::uint32_t{16}, false);
  co_return r ? rpc_error{} : r.error();
}

detail::detached caller(rpc_client& c, shared_load& s) {
  const bool missing = *s.mode == "not-found";
  const rpc_errc want = expected_outcome(*s.mode);
  std::uint64_t calls = 0, unexpected = 0;
  std::string first;
  while (steady::now() < s.end) {
    rpc_error e;
    if (missing) {
      e = co_await one_call<auth_unregistered>(c, *s.opts);
    } else {
      e = co_await one_call<bench_call>(c, *s.opts);
    }
    ++calls;
    if (e.code() != want && unexpected++ == 0) first = e ? e.message() : "ok";
  }
  {
    std::lock_guard lk(s.m);
    s.out.calls += calls;
    s.out.unexpected += unexpected;
    if (s.out.first_unexpected.empty()) s.out.first_unexpected = first;
  }
  s.left.fetch_sub(1);
}

// `callers` coroutines keep one call each in flight for `seconds`.
load_result run_load(rpc_client& c, const std::string& mode, const call_options& opts, int callers,
                     double seconds) {
  shared_load s;
  s.mode = &mode;
  s.opts = &opts;
  s.left = callers;
  const auto t0 = steady::now();
  s.end = t0 + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));
  for (int i = 0; i < callers; ++i) caller(c, s);
  while (s.left.load() > 0) std::this_thread::sleep_for(1ms);
  s.out.seconds = std::chrono::duration<double>(steady::now() - t0).count();
  return std::move(s.out);
}

struct client_side {
  explicit client_side(const options& o, const std::string& endpoint)
      : reactors(
            1,
            [pin = o.pin](std::size_t) {
              if (pin) pin_to_cpu(1);
              track_this_thread_as_client();
            },
            std::chrono::nanoseconds{}, o.adaptive_poll) {
    client_config cc;
    cc.pool = &reactors;
    cc.request_timeout = 60000ms;
    cc.busy_poll = o.busy_poll;
    client = std::make_unique<rpc_client>(cc);
    auto e = sync_wait([&]() -> task<rpc_error> {
      co_return co_await client->connect(endpoint);
    }());
    if (e) throw std::runtime_error("connect " + endpoint + ": " + e.message());
  }
  io_pool reactors;
  std::unique_ptr<rpc_client> client;
};

struct call_setup {
  explicit call_setup(const std::string& mode) : payload(128, 'p') {
    opts.timeout = 60000ms;
    opts.attachment = payload;
    if (sends_metadata(mode)) {
      md.add("authorization", "Bearer " + std::string(token)).add("tenant", "acme");
      opts.metadata = &md;
    }
  }
  std::string payload;
  metadata md;
  call_options opts;
};

struct row_result {
  double qps = 0;
  double server_allocs = 0, client_allocs = 0;  // per call
  load_result load;
};

row_result run_row(const options& o, const std::string& mode, int callers) {
  auto server = start_auth_server(mode, "127.0.0.1:0", o);
  client_side cs(o, "127.0.0.1:" + std::to_string(server->port()));
  const call_setup setup(mode);
  if (o.warmup > 0) (void)run_load(*cs.client, mode, setup.opts, callers, o.warmup);
  const auto s0 = tracked_allocations(), c0 = client_allocations();
  row_result r;
  r.load = run_load(*cs.client, mode, setup.opts, callers, o.duration);
  const double calls = static_cast<double>(std::max<std::uint64_t>(1, r.load.calls));
  r.server_allocs = static_cast<double>(tracked_allocations() - s0) / calls;
  r.client_allocs = static_cast<double>(client_allocations() - c0) / calls;
  r.qps = static_cast<double>(r.load.calls) / r.load.seconds;
  cs.client.reset();
  server->stop();
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

bool known_mode(const std::string& m) {
  return std::find(all_modes.begin(), all_modes.end(), m) != all_modes.end();
}

// --connect: only the client of one mode, for callgrind; prints the calls it made.
int run_auth_client(const options& o, const std::string& mode) {
  client_side cs(o, o.connect);
  const call_setup setup(mode);
  const int callers = o.concurrency.empty() ? 1 : o.concurrency.front();
  const load_result r = run_load(*cs.client, mode, setup.opts, callers, o.duration);
  std::printf("calls %llu unexpected %llu\n", static_cast<unsigned long long>(r.calls),
              static_cast<unsigned long long>(r.unexpected));
  if (r.unexpected > 0) std::fprintf(stderr, "first unexpected: %s\n", r.first_unexpected.c_str());
  return r.unexpected == 0 ? 0 : 1;
}

}  // namespace

int run_auth_experiment(const options& o) {
  if (!o.auth_mode.empty() && !known_mode(o.auth_mode)) {
    std::fprintf(stderr, "corvid-bench auth: unknown --auth-mode '%s'\n", o.auth_mode.c_str());
    return 2;
  }
  if (!o.connect.empty()) return run_auth_client(o, o.auth_mode.empty() ? "plain" : o.auth_mode);
  const std::vector<std::string> modes =
      o.auth_mode.empty() ? all_modes : std::vector<std::string>{o.auth_mode};
  const std::vector<int> concurrency =
      o.concurrency == options{}.concurrency ? std::vector<int>{1, 64} : o.concurrency;
  table t{{"mode", "callers", "calls/s", "vs plain", "client allocs/call", "server allocs/call",
           "outcome"},
          {}};
  std::uint64_t unexpected = 0;
  for (int c : concurrency) {
    std::vector<std::vector<double>> qps(modes.size());
    std::vector<row_result> last(modes.size());
    for (int round = 0; round < o.rounds; ++round) {
      for (std::size_t m = 0; m < modes.size(); ++m) {
        last[m] = run_row(o, modes[m], c);
        qps[m].push_back(last[m].qps);
        unexpected += last[m].load.unexpected;
        if (last[m].load.unexpected > 0)
          std::fprintf(stderr, "%s c=%d: %llu unexpected outcomes, first: %s\n", modes[m].c_str(),
                       c, static_cast<unsigned long long>(last[m].load.unexpected),
                       last[m].load.first_unexpected.c_str());
      }
    }
    const double plain = median(qps[0]);
    for (std::size_t m = 0; m < modes.size(); ++m) {
      const double q = median(qps[m]);
      t.rows.push_back({modes[m], std::to_string(c), fixed(q, 0),
                        fixed(plain > 0 ? q / plain : 0.0, 3), fixed(last[m].client_allocs, 3),
                        fixed(last[m].server_allocs, 3),
                        std::string(to_string(expected_outcome(modes[m])))});
    }
  }
  std::printf(
      "auth: 128 B calls (16 B replies), server and client on one io thread each (%s), median "
      "of %d interleaved rounds of %.1f s, adaptive poll %lld us, %u cores\n\n",
      o.pin ? "pinned" : "not pinned", o.rounds, o.duration,
      static_cast<long long>(o.adaptive_poll.count()), std::thread::hardware_concurrency());
  t.print_markdown(std::cout);
  return unexpected == 0 ? 0 : 1;
}

int run_auth_server(const options& o) {
  const std::string mode = o.auth_mode.empty() ? "plain" : o.auth_mode;
  if (!known_mode(mode)) {
    std::fprintf(stderr, "corvid-bench auth-server: unknown --auth-mode '%s'\n", mode.c_str());
    return 2;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto server = start_auth_server(mode, o.listen.empty() ? "127.0.0.1:9000" : o.listen, o);
  std::printf("auth-server (%s) listening on port %u\n", mode.c_str(), server->port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server->stop();
  return 0;
}

}  // namespace corvid::bench
