#pragma once
// Polling for something that must happen, within a limit the caller chose (scale it with
// patience() from slowdown.hpp: sanitizer builds are slower).
#include <chrono>
#include <thread>

namespace corvid::test {

// Polls `pred` every 5 ms until it holds or `limit` passes; then `pred`'s final answer.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace corvid::test
