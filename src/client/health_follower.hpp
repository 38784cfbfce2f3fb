#pragma once
// One endpoint's health, followed for its load_balancer through the health watch stream
// (protocol/health.hpp) on one of the endpoint's pooled connections. What the watch says lands
// in the node's endpoint_health, which pick() reads with the atomics it reads anyway: nothing
// here runs per call. The watch is re-opened after it ends or breaks, with the pool's reconnect
// back-off (jittered); a server that predates the watch is simply not followed.
#include <chrono>
#include <memory>
#include <mutex>

#include "corvid/client/client_pool.hpp"
#include "corvid/client/load_balancer.hpp"

#include "../runtime/asio_all.hpp"

namespace corvid::detail {

class health_follower : public std::enable_shared_from_this<health_follower> {
 public:
  // Starts following on one of the pool's reactors. `health` is the node's (an aliasing
  // pointer that keeps the node alive until the follower has stopped).
  static std::shared_ptr<health_follower> start(std::shared_ptr<client_pool> pool,
                                                std::shared_ptr<endpoint_health> health,
                                                const pool_config& config);
  // Any thread, idempotent: the watch is cancelled and the follower lets go of the node soon.
  void stop();
  // A new instance at the address: re-open now rather than after the back-off.
  void retry_now();

  explicit health_follower(asio::io_context& reactor) : reactor_(reactor), timer_(reactor) {}

 private:
  using reader = stream_reader<health_status>;
  struct run;
  // Under mutex_: the open watch's reader, which stop() cancels; null while none is open.
  bool hold(reader* r);
  void release();
  // Ends the held watch (to re-open it elsewhere); false if stopped or none is held.
  bool cancel_held();
  bool stopped() const;
  struct pause;  // the back-off, cut short by stop() and retry_now()

  asio::io_context& reactor_;  // where the follower runs between waits
  asio::steady_timer timer_;   // the back-off; used on reactor_ only
  mutable std::mutex mutex_;
  reader* reader_ = nullptr;
  bool stopped_ = false;
  bool pausing_ = false;
};

}  // namespace corvid::detail
