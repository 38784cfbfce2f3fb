#pragma once
// What the admin side needs from the server it serves, declared here so that src/admin never
// includes src/server (the server depends on the admin side, not the other way round):
// server_core implements it (src/server/server_snapshot.cpp).
#include <cstddef>

#include "corvid/server/server_config.hpp"

#include "../admission/shared_slots.hpp"
#include "../memory/server_memory.hpp"
#include "../metrics/snapshot.hpp"

namespace corvid::admin {

// Admin sessions on one listener (the RPC port's, or admin_address's, each a pool of its
// own: a private port shares no capacity with the public one). At most this many at once...
inline constexpr std::size_t max_admin_sessions = 16;
// ...and at most this many from one peer address (detail::peer_key), so that one host cannot
// take every session of a pool. More are answered 503 and closed.
inline constexpr std::size_t max_admin_sessions_per_peer = 4;

class admin_host {
 public:
  virtual ~admin_host() = default;
  virtual const server_config& admin_config() const noexcept = 0;
  // Every byte a session holds is charged here first (read_buffers, queued_replies).
  virtual detail::server_memory& admin_memory() noexcept = 0;
  // The full view (/metrics, /status, /connections): takes the connection registry's lock.
  virtual metrics::server_snapshot metrics_snapshot() const = 0;
  virtual bool stopping() const = 0;
  // The session pool of the RPC port (server_config::http_admin).
  virtual detail::shared_slots& rpc_port_admin_sessions() noexcept = 0;
};

}  // namespace corvid::admin
