#include "worker_pool.hpp"

#include <algorithm>
#include <new>
#include <pthread.h>

#include "corvid/detail/blocking_invoker.hpp"
#include "corvid/detail/recycled_handler.hpp"

#include "../runtime/asio_all.hpp"

namespace corvid::detail {

worker_pool::worker_pool(std::size_t threads, std::size_t max_queued, std::size_t max_queued_bytes)
    : max_queued_(std::max<std::size_t>(max_queued, 1)),
      max_queued_bytes_(max_queued_bytes),
      reserve_(max_queued_ / 8) {
  threads = std::max<std::size_t>(threads, 1);
  threads_.reserve(threads);
  try {
    for (std::size_t i = 0; i < threads; ++i) {
      threads_.emplace_back([this] { run(); });
      ::pthread_setname_np(threads_.back().native_handle(), "corvid-worker");
    }
  } catch (...) {
    stop();  // the threads already started
    throw;
  }
}

worker_pool::~worker_pool() { stop(); }

worker_pool::refusal worker_pool::submit(blocking_job& job, blocking_lane& lane,
                                         bool light) noexcept {
  job.next = nullptr;
  job.queued_at = std::chrono::steady_clock::now();
  {
    std::lock_guard lk(mutex_);
    if (stopping_) return refusal::stopped;
    if (queued_ >= max_queued_ || (!light && queued_ >= max_queued_ - reserve_)) {
      return refusal::length;
    }
    if (queued_ != 0 && queued_bytes_ + job.bytes > max_queued_bytes_) return refusal::bytes;
    const bool was_empty = lane.head == nullptr;
    (was_empty ? lane.head : lane.tail->next) = &job;
    lane.tail = &job;
    if (was_empty) {
      if (backlog_turns_ >= lane.fresh_from) {
        fresh_.push_back(lane);
      } else {
        backlog_.push_back(lane);
        ++backlog_lanes_;
      }
    }
    ++queued_;
    queued_bytes_ += job.bytes;
  }
  work_.notify_one();
  return refusal::none;
}

std::string worker_pool::describe(refusal r) const {
  std::lock_guard lk(mutex_);
  switch (r) {
    case refusal::length:
      return "blocking call refused: the worker queue is full (" + std::to_string(queued_) +
             " calls wait for " + std::to_string(threads_.size()) +
             " worker threads; server_config::worker_queue_length = " +
             std::to_string(max_queued_) + ", of which the last " + std::to_string(reserve_) +
             " are kept for connections with fewer than 2 blocking calls in flight)";
    case refusal::bytes:
      return "blocking call refused: the worker queue is full (" + std::to_string(queued_bytes_) +
             " bytes of calls wait for " + std::to_string(threads_.size()) +
             " worker threads; server_config::worker_queue_bytes = " +
             std::to_string(max_queued_bytes_) + ")";
    default:
      return "blocking call refused: the server is stopping";
  }
}

void worker_pool::lane_list::push_back(blocking_lane& l) noexcept {
  l.next = nullptr;
  (tail != nullptr ? tail->next : head) = &l;
  tail = &l;
}

blocking_lane* worker_pool::lane_list::pop_front() noexcept {
  blocking_lane* l = head;
  if (l != nullptr) {
    head = l->next;
    if (head == nullptr) tail = nullptr;
  }
  return l;
}

blocking_job* worker_pool::take() noexcept {
  blocking_lane* lane = fresh_.pop_front();
  if (lane == nullptr) {
    lane = backlog_.pop_front();
    --backlog_lanes_;
    ++backlog_turns_;
  }
  blocking_job* job = lane->head;
  lane->head = job->next;
  if (lane->head == nullptr) lane->tail = nullptr;
  lane->fresh_from = backlog_turns_ + backlog_lanes_;
  if (lane->head != nullptr) {  // its next call waits for its next turn
    backlog_.push_back(*lane);
    ++backlog_lanes_;
  }
  return job;
}

void worker_pool::run() noexcept {
  for (;;) {
    blocking_job* job = nullptr;
    {
      std::unique_lock lk(mutex_);
      work_.wait(lk, [&] { return queued_ != 0 || stopping_; });
      if (queued_ == 0) return;  // stopping, and nothing left to do
      job = take();
      --queued_;
      queued_bytes_ -= job->bytes;
      ++busy_;
    }
    job->execute(job);  // the job is the reactor's again once this returns
    std::lock_guard lk(mutex_);
    --busy_;
  }
}

void worker_pool::stop() {
  std::lock_guard join(join_mutex_);
  {
    std::lock_guard lk(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

bool worker_pool::owns_current_thread() const noexcept {
  const auto me = std::this_thread::get_id();
  return std::any_of(threads_.begin(), threads_.end(),
                     [&](const std::thread& t) { return t.get_id() == me; });
}

std::size_t worker_pool::queued() const {
  std::lock_guard lk(mutex_);
  return queued_;
}
std::size_t worker_pool::queued_bytes() const {
  std::lock_guard lk(mutex_);
  return queued_bytes_;
}
std::size_t worker_pool::busy() const {
  std::lock_guard lk(mutex_);
  return busy_;
}

void post_blocking_completion(asio::io_context& reactor, void (*finish)(blocking_job*),
                              blocking_job* job) noexcept {
  for (;;) {
    try {
      asio::post(reactor, recycled([finish, job] { finish(job); }));
      return;
    } catch (...) {  // no memory for the handler: a worker may wait, the call must end
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

void refuse_expired(reply_sink& sink, std::uint64_t request_id, bool ran,
                    std::chrono::steady_clock::duration waited) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(waited).count();
  sink.reply_error(request_id, rpc_errc::timeout,
                   ran ? "deadline passed while the blocking handler ran"
                       : "deadline passed before the handler could run: it waited " +
                             std::to_string(ms) + " ms for a worker thread");
}

}  // namespace corvid::detail
