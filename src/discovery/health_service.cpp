#include "corvid/protocol/health.hpp"
#include "corvid/runtime/sleep.hpp"

namespace corvid {

stream<health_status> health_service::watch() {
  using namespace std::chrono_literals;
  // Polled, not notified: a status changes a few times in a server's life, and a timer per
  // watcher costs nothing between changes.
  health_status last = check();
  co_yield last;
  auto said = std::chrono::steady_clock::now();
  while (last != health_status::draining) {
    co_await sleep_for(50ms);
    const health_status now = check();
    if (now != last || std::chrono::steady_clock::now() - said >= 30s) {
      last = now;
      said = std::chrono::steady_clock::now();
      co_yield now;
    }
  }
}

}  // namespace corvid
