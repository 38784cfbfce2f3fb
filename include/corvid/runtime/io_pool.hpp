#pragma once
// A pool of reactors: one asio::io_context per thread. Each connection lives on exactly one
// reactor for its whole life, so its state needs no locks.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "corvid/detail/asio.hpp"
#include "corvid/detail/polling_counters.hpp"
#include "corvid/export.hpp"

namespace corvid {

class CORVID_API io_pool {
 public:
  // Runs on each reactor thread before it starts serving, with the thread's index: the place
  // to pin threads to cores or name them.
  using thread_start_hook = std::function<void(std::size_t index)>;

  // How long, at most, an idle reactor polls for its next event before it sleeps, when
  // events have been arriving that soon after it went idle (a round trip of calls): it learns
  // the budget, and drops it to zero once events come further apart, so a quiet reactor
  // sleeps. Removes a thread wake-up from each round trip at low concurrency (docs/
  // benchmarks.md, "Adaptive polling"); costs CPU only while traffic flows that densely.
  static constexpr std::chrono::microseconds default_adaptive_poll{100};

  // Starts `threads` reactor threads (at least one). `busy_poll` > 0: latency mode, see
  // raise_busy_poll. `adaptive_poll`: see default_adaptive_poll; 0 = off (reactors sleep
  // whenever they have nothing to run).
  explicit io_pool(std::size_t threads, thread_start_hook on_start = {},
                   std::chrono::nanoseconds busy_poll = {},
                   std::chrono::nanoseconds adaptive_poll = default_adaptive_poll);
  ~io_pool();
  io_pool(const io_pool&) = delete;
  io_pool& operator=(const io_pool&) = delete;

  std::size_t size() const noexcept { return reactors_.size(); }
  asio::io_context& at(std::size_t i) noexcept { return reactors_[i]->ctx; }
  // Round-robin choice, for placing a new connection.
  asio::io_context& next() noexcept;

  // Latency mode: each reactor spins on its sockets (a non-blocking poll of the kernel) for up
  // to `budget` after its last event before it sleeps, so a reply arriving within the budget
  // is seen without a thread wake-up. Costs up to one busy core per reactor while traffic
  // flows. Only raises the pool's budget (clients sharing a pool each ask for theirs, the
  // largest wins); 0 never switches it off. Callable from any thread, at any time.
  void raise_busy_poll(std::chrono::nanoseconds budget);
  std::chrono::nanoseconds busy_poll() const noexcept {
    return std::chrono::nanoseconds(busy_poll_ns_.load(std::memory_order_relaxed));
  }

  // How many times reactor `i` went to sleep in the kernel after polling adaptively for its
  // next event (or straight away, with a budget of zero), or after spinning out its
  // busy-poll budget: with traffic that polling catches, it grows far slower than the
  // reactor's event count. Counted only while a reactor polls (not in plain run()).
  std::uint64_t polling_sleeps(std::size_t i) const noexcept {
    return reactors_[i]->polling.sleeps.load(std::memory_order_relaxed);
  }
  // How many times reactor `i` stopped polling for a while (1 ms at first, doubling up to 1 s
  // while it keeps happening) because polling was not paying: it lost its CPU while polling
  // (other threads wanted it), or 8 polls in a row caught nothing (the peer it waits for runs
  // on its CPU, and could only run once the poll ended). Of its sleeps, polling_held_sleeps(i)
  // came without polling for that reason.
  std::uint64_t polling_holds(std::size_t i) const noexcept {
    return reactors_[i]->polling.holds.load(std::memory_order_relaxed);
  }
  std::uint64_t polling_held_sleeps(std::size_t i) const noexcept {
    return reactors_[i]->polling.held_sleeps.load(std::memory_order_relaxed);
  }

  // Stops every reactor (pending handlers are not run) and joins the threads. Idempotent;
  // must not be called from one of this pool's threads.
  void stop();
  // True on one of this pool's threads.
  bool owns_current_thread() const noexcept;

  // The process-wide pool clients use unless client_config names another; created on first
  // use with a reactor per CPU the process may use (usable_cpus(): affinity and cgroup
  // quota), polling adaptively with cpu_budget::adaptive_poll().
  static io_pool& default_pool();

 private:
  struct CORVID_API reactor {
    asio::io_context ctx{1};  // concurrency hint 1: only this reactor's thread runs it
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
    std::thread thread;
    detail::polling_counters polling;
  };
  std::vector<std::unique_ptr<reactor>> reactors_;
  std::atomic<std::size_t> next_{0};
  std::atomic<std::int64_t> busy_poll_ns_{0};
  std::chrono::nanoseconds adaptive_poll_;
  std::atomic<bool> stopping_{false};  // reactors leave their loop instead of restarting
  std::mutex stop_mutex_;              // a second stop() waits for the first to finish joining
  bool stopped_ = false;
};

// The io_context of the reactor running the calling thread, or null off reactor threads.
CORVID_API asio::io_context* current_reactor() noexcept;

}  // namespace corvid
