#include "corvid/runtime/io_pool.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "corvid/runtime/cpu_budget.hpp"

#include "reactor_loop.hpp"
#include <openssl/crypto.h>
#include <openssl/ssl.h>

namespace corvid {
namespace {
thread_local asio::io_context* this_reactor = nullptr;
}  // namespace

asio::io_context* current_reactor() noexcept { return this_reactor; }

io_pool::io_pool(std::size_t threads, thread_start_hook on_start,
                 std::chrono::nanoseconds busy_poll, std::chrono::nanoseconds adaptive_poll)
    : busy_poll_ns_(std::max<std::int64_t>(0, busy_poll.count())),
      adaptive_poll_(std::max(adaptive_poll, std::chrono::nanoseconds::zero())) {
  // Reactors run TLS, and OpenSSL keeps per-thread state (its error queue) that a thread
  // frees with OPENSSL_thread_stop() as it ends. OpenSSL is initialised here, before the
  // pool exists, so its exit-time cleanup runs after a static pool's destructor has joined
  // the threads; initialised later, the cleanup would come first and the threads' state
  // would never be freed.
  ::OPENSSL_init_ssl(0, nullptr);
  if (threads == 0) threads = 1;
  reactors_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    auto r = std::make_unique<reactor>();
    r->guard.emplace(r->ctx.get_executor());
    reactors_.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < reactors_.size(); ++i) {
    reactors_[i]->thread = std::thread([this, r = reactors_[i].get(), i, on_start] {
      asio::io_context* ctx = &r->ctx;
      this_reactor = ctx;
      if (on_start) on_start(i);
      // A handler that throws is a bug in corvid or in user code resumed inline; report it
      // and keep the reactor alive so every other connection keeps being served. The loop
      // also returns when raise_busy_poll stops the context to switch it into spinning.
      for (;;) {
        try {
          detail::run_reactor(*ctx, busy_poll_ns_, adaptive_poll_, r->polling);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "corvid: exception escaped a reactor handler: %s\n", e.what());
        } catch (...) {
          std::fprintf(stderr, "corvid: unknown exception escaped a reactor handler\n");
        }
        if (stopping_.load()) break;
        ctx->restart();
        // Checked again after restart(): a stop() that came between the check above and the
        // restart has had its ctx.stop() undone, but not its flag.
        if (stopping_.load()) break;
      }
      this_reactor = nullptr;
      ::OPENSSL_thread_stop();
    });
  }
}

io_pool::~io_pool() { stop(); }

void io_pool::raise_busy_poll(std::chrono::nanoseconds budget) {
  const std::int64_t want = budget.count();
  std::int64_t had = busy_poll_ns_.load();
  while (want > had && !busy_poll_ns_.compare_exchange_weak(had, want)) {
  }
  // Reactors without a budget sit in run(), which never looks at it: stop their contexts so
  // they come out and restart in the spinning loop (pending handlers are kept). Those already
  // spinning read the new budget on their next pass.
  if (had == 0 && want > 0) {
    for (auto& r : reactors_) r->ctx.stop();
  }
}

asio::io_context& io_pool::next() noexcept {
  return reactors_[next_.fetch_add(1, std::memory_order_relaxed) % reactors_.size()]->ctx;
}

void io_pool::stop() {
  std::lock_guard lk(stop_mutex_);
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  for (auto& r : reactors_) {
    r->guard.reset();
    r->ctx.stop();
  }
  for (auto& r : reactors_) {
    if (r->thread.joinable()) r->thread.join();
  }
}

bool io_pool::owns_current_thread() const noexcept {
  for (const auto& r : reactors_) {
    if (&r->ctx == this_reactor) return true;
  }
  return false;
}

io_pool& io_pool::default_pool() {
  // Sized to the CPUs the process may use (affinity and cgroup quota), its polling budget
  // shrunk when the quota gives each reactor less than a whole CPU.
  static const cpu_budget budget = usable_cpus();
  static io_pool pool(budget.threads(), {}, {}, budget.adaptive_poll());
  return pool;
}

}  // namespace corvid
