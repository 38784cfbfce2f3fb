// Which spinning reactors count as sharing a core: only those spinning on the same CPU,
// not paused ones and not released ones.
#include "runtime/spinners.hpp"

#include <pthread.h>
#include <sched.h>

#include <gtest/gtest.h>

namespace corvid::detail {
namespace {

// All slots below live on this test's thread, pinned to its CPU for the test so they all see
// the same one.
class Spinners : public ::testing::Test {
 protected:
  void SetUp() override {
    pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  }
  void TearDown() override { pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_); }
  cpu_set_t saved_{};
};

TEST_F(Spinners, TwoSpinnersOnOneCpuShareIt) {
  spinner_slot a;
  spinner_slot b;
  a.shares_core();  // a records its CPU
  EXPECT_TRUE(b.shares_core());
  EXPECT_TRUE(a.shares_core());
}

TEST_F(Spinners, APausedSpinnerIsNotCounted) {
  spinner_slot a;
  spinner_slot b;
  a.shares_core();
  a.pause();
  EXPECT_FALSE(b.shares_core());
}

TEST_F(Spinners, AReleasedSpinnerIsNotCountedAndItsSlotIsReused) {
  spinner_slot b;
  {
    spinner_slot a;
    a.shares_core();
    EXPECT_TRUE(b.shares_core());
  }
  EXPECT_FALSE(b.shares_core());
  spinner_slot c;  // takes the freed slot; not spinning until it records a CPU
  EXPECT_FALSE(b.shares_core());
}

TEST_F(Spinners, ASpinnerAloneNeverShares) {
  spinner_slot a;
  EXPECT_FALSE(a.shares_core());
  EXPECT_FALSE(a.shares_core());
}

}  // namespace
}  // namespace corvid::detail
