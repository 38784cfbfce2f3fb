// task.hpp's guarantee that an awaiting coroutine resumes by symmetric transfer, so that long
// chains never grow the stack. The transfer is a tail call only where the compiler makes one:
// g++ 12 needs -foptimize-sibling-calls (on from -O2; CMakeLists.txt adds it to this file in
// the -O1 dev build) and never makes one under ASan or TSan, whose builds leave this file out.
#include <cstdint>

#include <gtest/gtest.h>

#include "corvid/sync_wait.hpp"
#include "corvid/task.hpp"

#include "chain_tasks.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#error "symmetric transfer is no tail call under a sanitizer: leave this file out of the build"
#endif

namespace corvid {
namespace {

using test::answer;
using test::depth;
using test::sequential;

// The address of the caller's stack frame: how deep the native stack is right now.
[[gnu::noinline]] std::uintptr_t stack_depth_marker() {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

task<int> probe_nested(int n, std::uintptr_t& at_bottom) {
  if (n == 0) {
    at_bottom = stack_depth_marker();
    co_return 0;
  }
  co_return 1 + co_await probe_nested(n - 1, at_bottom);
}

task<> probe_sequential(std::uintptr_t& after_10, std::uintptr_t& after_1010) {
  for (int i = 1; i <= 1010; ++i) {
    co_await answer();
    if (i == 10) after_10 = stack_depth_marker();
  }
  after_1010 = stack_depth_marker();
}

// 1000 more levels (or 1000 more completed awaits) must not move the stack pointer; with
// nested resume() calls each costs ~64-700 bytes of native stack.
TEST(Task, SymmetricTransferKeepsStackFlat) {
  std::uintptr_t shallow = 0;
  std::uintptr_t deep = 0;
  EXPECT_EQ(sync_wait(probe_nested(10, shallow)), 10);
  EXPECT_EQ(sync_wait(probe_nested(1010, deep)), 1010);
  EXPECT_LT(shallow - deep, 1024u) << "stack grew by " << (shallow - deep) << " bytes";

  std::uintptr_t after_10 = 0;
  std::uintptr_t after_1010 = 0;
  sync_wait(probe_sequential(after_10, after_1010));
  EXPECT_LT(after_10 - after_1010, 1024u) << "stack grew by " << (after_10 - after_1010);
}

// The same guarantee at scale: without tail calls these overflow an 8 MiB stack.
TEST(Task, DeepNestedChainDoesNotOverflowStack) { EXPECT_EQ(sync_wait(depth(100000)), 100000); }
TEST(Task, LongSequentialChainDoesNotOverflowStack) {
  EXPECT_EQ(sync_wait(sequential(100000)), 4200000);
}

}  // namespace
}  // namespace corvid
