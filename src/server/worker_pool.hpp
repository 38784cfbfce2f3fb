#pragma once
// The threads blocking handlers run on (rpc_server::register_blocking_handler), created at
// start only when such a handler is registered, and the bounded FIFO queue in front of them.
// Reactors submit calls (one mutex per blocking call; other calls never touch the pool);
// workers take them in order, run them and post their replies back to the connections'
// reactors. stop() lets the workers empty the queue (every queued call is executed: run, or
// dropped as cancelled or expired, and answered on its reactor), then joins them.
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "corvid/detail/blocking_job.hpp"

namespace corvid::detail {

class worker_pool {
 public:
  // Throws std::system_error when a thread cannot be created.
  worker_pool(std::size_t threads, std::size_t max_queued, std::size_t max_queued_bytes);
  ~worker_pool();  // stop()
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  enum class refusal { none, length, bytes, stopped };
  // Queues `job` unless the queue holds max_queued calls, or its bytes would pass
  // max_queued_bytes (a job always fits an empty queue: its bytes are already charged to the
  // memory trackers, and it could never run otherwise), or the pool is stopping. The last
  // eighth of the places is a reserve only `light` jobs may take (their connection has
  // almost nothing queued): a crowd of connections that each fill their share (a connection
  // pauses at its own share, connection_admission) cannot shut a light client out.
  refusal submit(blocking_job& job, bool light = true) noexcept;
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

  const std::size_t max_queued_;
  const std::size_t max_queued_bytes_;
  const std::size_t reserve_;  // places only light jobs take
  mutable std::mutex mutex_;
  std::condition_variable work_;
  blocking_job* head_ = nullptr;  // FIFO, linked through blocking_job::next
  blocking_job* tail_ = nullptr;
  std::size_t queued_ = 0;
  std::size_t queued_bytes_ = 0;
  std::size_t busy_ = 0;
  bool stopping_ = false;
  std::mutex join_mutex_;  // serialises stop(): a second caller returns once joined
  std::vector<std::thread> threads_;
};

}  // namespace corvid::detail
