#pragma once
// Work the client starts on its own and nobody awaits: health watches, warm-ups, probes of
// ejected endpoints, a pool's first connect. Each holds a background_work while it runs, so
// a program can wait for all of it to end (background_running() == 0) after its balancers and
// pools are gone and before it exits: a coroutine still suspended when its reactor is
// destroyed is never resumed, and its frame is lost.
#include <atomic>
#include <cstddef>

namespace corvid::detail {

// How many are running now, in the whole process.
std::size_t background_running() noexcept;

class background_work {
 public:
  background_work() noexcept;
  ~background_work();
  background_work(const background_work&) = delete;
  background_work& operator=(const background_work&) = delete;
};

}  // namespace corvid::detail
