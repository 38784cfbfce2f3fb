#pragma once
// Including this makes a test binary wait, once its tests are done, for the client's background
// work (health watches, warm-ups, probes, first connects: src/client/background.hpp) to end,
// and fail if it does not: a balancer or pool that was let go must let go of its work too. The
// wait also keeps the process from exiting while that work is suspended on a reactor, which
// would lose its coroutine frames (LeakSanitizer reports them). Needs src/ on the include path.
#include <chrono>

#include <gtest/gtest.h>

#include "client/background.hpp"
#include "eventually.hpp"
#include "slowdown.hpp"

namespace corvid::test {

class background_quiet : public ::testing::Environment {
 public:
  void TearDown() override {
    EXPECT_TRUE(eventually([] { return detail::background_running() == 0; },
                           patience(std::chrono::seconds(20))))
        << detail::background_running()
        << " background task(s) of the client still running after the tests";
  }
};

inline ::testing::Environment* const background_quiet_registered =
    ::testing::AddGlobalTestEnvironment(new background_quiet);

}  // namespace corvid::test
