#pragma once
// The shared state of one hedged call through a load_balancer (method_config.hpp,
// hedging_policy): its copies report their outcomes here, and the caller waits here for the
// next outcome or for the moment to send another copy. Made only for hedged calls.
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "corvid/call_metadata.hpp"
#include "corvid/export.hpp"
#include "corvid/trace/trace_context.hpp"

namespace corvid::detail {

class CORVID_API hedge_race : public std::enable_shared_from_this<hedge_race> {
 public:
  enum class event { copy_ended, delay_passed };
  class [[nodiscard]] waiting {
   public:
    waiting(hedge_race& race, std::chrono::steady_clock::duration delay) noexcept
        : race_(race), delay_(delay) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h);
    event await_resume() const noexcept { return race_.woken_by_; }

   private:
    hedge_race& race_;
    std::chrono::steady_clock::duration delay_;
  };

  virtual ~hedge_race() = default;
  // Suspends the caller until a copy ends (one it was not woken for yet) or `delay` passes;
  // a negative delay sets no timer. Owned through a shared_ptr (the timer holds one).
  waiting next(std::chrono::steady_clock::duration delay) noexcept { return waiting(*this, delay); }
  // A copy ended, its outcome stored under `mutex`: wakes the caller if it waits.
  void copy_ended();

  std::mutex mutex;
  // What every copy sends besides its arguments: they may outlive the caller's frame.
  std::string attachment;
  std::optional<trace_context> trace;
  std::optional<corvid::metadata> request_metadata;  // call_options::metadata
  // Each copy's reply metadata (when the caller asked for it), by copy: a copy's reply writes
  // its own, the caller takes the answer's. A deque: adding a copy's moves none of the others.
  std::deque<corvid::metadata> reply_metadata;  // grown under mutex

 private:
  void delay_passed(std::uint64_t round);
  std::coroutine_handle<> waiter_;  // under mutex
  unsigned unseen_ = 0;             // copies ended while the caller did not wait
  std::uint64_t round_ = 0;         // which wait a timer belongs to
  event woken_by_ = event::copy_ended;
};

// R: the call's result; Reply: the async_reply of one copy, kept to cancel it.
template <class R, class Reply>
struct hedge_copies final : hedge_race {
  // Under mutex:
  std::vector<std::optional<Reply>> replies;  // by copy; set once its request is queued
  std::optional<R> answer;                    // the first answer: a reply, or a final error
  std::size_t answer_from = 0;
  std::optional<R> last_failure;  // the last error that let other copies go on
  unsigned running = 0;
  bool decided = false;  // the caller took the answer: copies still out are cancelled

  // Under mutex: the handles of every copy but the answer's, to cancel on the wire once the
  // mutex is released (a cancel may end the copy, and its coroutine, on this thread).
  std::vector<Reply> take_losers() {
    std::vector<Reply> out;
    for (std::size_t i = 0; i < replies.size(); ++i) {
      if (i != answer_from && replies[i]) out.push_back(std::move(*replies[i]));
      replies[i].reset();
    }
    return out;
  }
};

}  // namespace corvid::detail
