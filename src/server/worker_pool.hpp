#pragma once
// The threads blocking handlers run on (rpc_server::register_blocking_handler), created at
// start only when such a handler is registered, and the bounded queue in front of them.
// Reactors submit calls (one mutex per blocking call; other calls never touch the pool);
// workers take them, run them and post their replies back to the connections' reactors.
// The queue is one FIFO lane per connection, served in turns (one call per turn), so a
// connection that queued many calls cannot make another's wait for all of them: a
// connection with nothing waiting is fresh, and its call goes to the next worker that frees.
// stop() lets the workers empty the queue (every queued call is executed: run, or dropped as
// cancelled or expired, and answered on its reactor), then joins them.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "corvid/detail/blocking_job.hpp"

#include "blocking_lane.hpp"

namespace corvid::detail {

class worker_pool {
 public:
  // Throws std::system_error when a thread cannot be created.
  worker_pool(std::size_t threads, std::size_t max_queued, std::size_t max_queued_bytes);
  ~worker_pool();  // stop()
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  enum class refusal { none, length, bytes, stopped };
  // Queues `job` at the back of its connection's `lane` unless the queue (all lanes) holds
  // max_queued calls, or its bytes would pass max_queued_bytes (a job always fits an empty
  // queue: its bytes are already charged to the memory trackers, and it could never run
  // otherwise), or the pool is stopping. The last eighth of the places is a reserve only
  // `light` jobs may take (their connection has almost nothing queued): a crowd of
  // connections that each fill their share (a connection pauses at its own share,
  // connection_admission) cannot shut a light client out.
  refusal submit(blocking_job& job, blocking_lane& lane, bool light = true) noexcept;
  // The server_busy message for a refusal.
  std::string describe(refusal r) const;

  // Finishes every queued job, then joins the threads. Idempotent, any thread but a worker.
  void stop();
  bool owns_current_thread() const noexcept;

  // For metrics: calls waiting, their bytes, and calls running on a worker now.
  std::size_t queued() const;
  std::size_t queued_bytes() const;
  std::size_t busy() const;
  std::size_t threads() const noexcept { return threads_.size(); }
  std::size_t max_queued() const noexcept { return max_queued_; }
  std::size_t max_queued_bytes() const noexcept { return max_queued_bytes_; }
  std::size_t reserve() const noexcept { return reserve_; }

 private:
  void run() noexcept;
  // The next call to run (a call must be waiting), from the lane whose turn it is.
  blocking_job* take() noexcept;

  // Lanes with calls waiting, in turn order, linked through blocking_lane::next.
  struct lane_list {
    blocking_lane* head = nullptr;
    blocking_lane* tail = nullptr;
    void push_back(blocking_lane& l) noexcept;
    blocking_lane* pop_front() noexcept;
  };

  const std::size_t max_queued_;
  const std::size_t max_queued_bytes_;
  const std::size_t reserve_;  // places only light jobs take
  mutable std::mutex mutex_;
  std::condition_variable work_;
  // A lane that gets a call while empty joins `fresh_` if it counts as fresh, else the back
  // of `backlog_`. Workers serve `fresh_` first; a lane served moves to the back of
  // `backlog_` while it has calls, and counts as fresh again only once every lane in the
  // backlog when it was served has had a turn: a connection that keeps one call at a time
  // waiting gets one turn per round like the others, not every other turn, and the backlog
  // keeps moving whatever connections come and go.
  lane_list fresh_;
  lane_list backlog_;
  std::size_t backlog_lanes_ = 0;
  std::uint64_t backlog_turns_ = 0;  // calls taken from backlog_ so far
  std::size_t queued_ = 0;
  std::size_t queued_bytes_ = 0;
  std::size_t busy_ = 0;
  bool stopping_ = false;
  std::mutex join_mutex_;  // serialises stop(): a second caller returns once joined
  std::vector<std::thread> threads_;
};

}  // namespace corvid::detail
