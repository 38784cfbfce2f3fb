#pragma once
// The health method every corvid server answers (registered by rpc_server itself):
//
//   auto s = co_await client.call<&corvid::health_service::check>();   // health_status
//   auto w = co_await client.stream<&corvid::health_service::watch>(); // each change
//
// serving: taking calls. not_serving: up, but asked not to get calls (rpc_server::
// set_serving(false), e.g. while warming up). draining: stop() has begun; calls still in
// flight finish, new ones belong elsewhere. Balancers follow each endpoint's watch and stop
// routing to one that is not serving (lb_config::follow_health), and probe ejected endpoints
// with check. An open enum: a status a newer server adds reads as "not serving" to an older
// client.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "corvid/export.hpp"
#include "corvid/stream/stream.hpp"

namespace corvid {

class request_context;

enum class health_status : std::uint8_t { serving = 0, not_serving = 1, draining = 2 };

class CORVID_API health_service {
 public:
  health_service();
  ~health_service();
  health_service(const health_service&) = delete;
  health_service& operator=(const health_service&) = delete;

  health_status check() { return status_.load(std::memory_order_relaxed); }
  // The status now, then each change as it happens, and the status again every 30 s so the
  // stream never idles out; ends after it has said draining, so it never holds up the drain
  // it announces.
  stream<health_status> watch(request_context& ctx);
  // Watches waiting for a change hear it at once. draining is final: set() leaves it.
  void set(health_status s);
  // Watches open now.
  std::size_t watchers() const noexcept;

 private:
  struct waiters;  // src/discovery/health_service.cpp: the watches waiting for a change
  std::atomic<health_status> status_{health_status::serving};
  std::unique_ptr<waiters> waiters_;
};

}  // namespace corvid
