#pragma once
#include <chrono>
#include <cstddef>

#include "corvid/client/client_config.hpp"

namespace corvid {

struct pool_config {
  // At most this many connections to the endpoint. 0 (the default) = auto: as many as the
  // server has reactors (io threads; a corvid server states its count in the pong that
  // answers the pool's connect-time ping, client_config::ask_server_reactors), at least
  // auto_min_connections and at most auto_max_connections; auto_min_connections while no
  // connection has heard the count (not yet, or a server that predates it). An explicit
  // value is the cap, whatever the server states.
  std::size_t max_connections = 0;
  static constexpr std::size_t auto_min_connections = 4;
  static constexpr std::size_t auto_max_connections = 64;
  // Calls in flight on a connection before another connection is opened: small calls
  // pipeline on few connections, where write coalescing merges them.
  std::size_t max_in_flight_per_connection = 128;
  // Spreading over the server's reactors: a server connection is served by one reactor
  // (thread), so while fewer connections are open than the server stated reactors (and
  // max_connections allows), another connection opens as soon as the least-loaded one has
  // this many calls in flight, instead of max_in_flight_per_connection. Calls go to the
  // least-loaded connection, so they stay balanced over the open ones. One caller at a time
  // (nothing in flight when it calls) uses one connection; 0 = never spread (the rule above
  // alone, as before the server stated its reactors). 8: enough calls per write for
  // coalescing to pay, few enough that a client with tens of calls in flight reaches every
  // reactor of a many-core server.
  std::size_t spread_in_flight = 8;
  // true: connect on first use; false: create() starts one connection at once.
  bool lazy_connect = true;
  std::chrono::milliseconds connect_timeout{2000};
  // After a failed connect, the next attempt waits initial * 2^(failures-1), at most max,
  // times a random factor in [0.5, 1.5) so many pools do not retry in lockstep. Calls that
  // find no usable connection meanwhile fail at once with connect_failed.
  std::chrono::milliseconds reconnect_backoff_initial{50};
  std::chrono::milliseconds reconnect_backoff_max{5000};
  // A connection with no call for this long is closed (0 = never); checked when the pool is
  // used and by a timer every idle_timeout / 2, so a pool nobody calls lets its sockets go.
  std::chrono::milliseconds idle_timeout{60000};
  // A connection older than this takes no new calls and closes once idle (0 = no limit).
  std::chrono::milliseconds max_connection_age{0};
  // Settings of each connection (request timeout, frame size, reactors, ...).
  client_config client;
};

struct pool_stats {
  std::size_t connections = 0;  // open now
  std::size_t connect_attempts = 0;
  std::size_t connect_failures = 0;
  std::size_t closed_idle = 0;
  std::size_t closed_aged = 0;
  std::size_t closed_broken = 0;
  std::size_t retried_unsent = 0;   // calls retried once because their request was never sent
  std::size_t server_reactors = 0;  // as the server last stated it; 0 = not (yet) stated
  std::size_t max_connections = 0;  // the cap in force: explicit, or auto's current value
  // Calls handed a connection living on another reactor than the caller's (so the call
  // crosses threads both ways): the caller's reactor had no usable connection and none could
  // be made there, or the caller ran on no reactor of the client's io_pool.
  std::size_t cross_reactor_calls = 0;
};

// Passed to the seed-style send_request callback: whether the connection is new.
enum class client_reuse_hint { first_use, reused };

}  // namespace corvid
