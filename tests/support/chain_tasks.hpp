#pragma once
// Coroutines that await each other in long chains, for the task tests: nested (each awaits
// the next) and sequential (one awaits many in turn).
#include "corvid/task.hpp"

namespace corvid::test {

inline task<int> answer() { co_return 42; }

// n coroutines deep, each awaiting the next: returns n.
inline task<int> depth(int n) {
  if (n == 0) co_return 0;
  co_return 1 + co_await depth(n - 1);
}

// One coroutine awaiting n answers in turn: returns 42 * n.
inline task<long> sequential(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) sum += co_await answer();
  co_return sum;
}

}  // namespace corvid::test
