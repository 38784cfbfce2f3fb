#pragma once
// corvid-bench idle: bytes of user-space memory per idle server connection.
#include "options.hpp"

namespace corvid::bench {

int run_idle_experiment(const options& o);

}  // namespace corvid::bench
