#pragma once
// A server connection's clock: one timer (only with a time limit configured) that looks at
// the connection when connection_liveness says to, and acts on what it finds (closes, pings,
// probes a paused peer, ends idle streams, gives an idle read buffer back). Paused, the connection
// reads nothing, so it would not see its peer leave: it watches the socket for an error (a reset)
// and probes the peer (probe_interval). docs/architecture.md, "Admission". Reactor thread only.
#include <chrono>
#include <optional>

#include "../runtime/asio_all.hpp"
#include "connection_liveness.hpp"

namespace corvid::detail {

class server_connection;

class connection_watch {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  connection_watch(server_connection& c, const server_config& config) noexcept
      : live(config), c_(c) {}

  void start();  // arms the timer, if any limit needs one
  bool timed() const noexcept { return timer_.has_value(); }
  // The connection paused: watch for a reset, and probe the peer soon.
  void watch_hangup();
  // A stream opened: its idle check may be due before the regular one.
  void stream_opened();
  void recheck_at(time_point t);  // on_timer then, not later
  // The connection took a read buffer: look within buffer_idle whether it went idle again.
  void buffer_taken();
  void closed() noexcept;

  connection_liveness live;  // the timestamps the connection reports to

 private:
  connection_liveness::view view() const noexcept;
  void arm();
  void on_timer();
  void ping();  // a heartbeat, or a probe that makes a peer that left answer with an RST
  void end_idle_streams(time_point now);

  server_connection& c_;
  std::optional<asio::steady_timer> timer_;
  bool error_watch_ = false;  // a wait_error op is on the socket
};

}  // namespace corvid::detail
