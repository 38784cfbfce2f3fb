#pragma once
// What admission answers when asked whether a peer may hold something more: admit it, pause
// the peer (read nothing more from it until the reason lifts: TCP pushes back on it), or
// refuse this one thing with an error the caller sends (fail: the peer broke the protocol,
// the connection ends). Admission decides; the connection acts. Nothing here calls back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "corvid/error.hpp"

namespace corvid::detail {

enum class pause_reason : std::uint8_t {
  memory,   // a tracker refused: a release wakes the peer (server_memory::wait)
  calls,    // max_calls_per_connection running: a call's end wakes it
  replies,  // max_queued_reply_bytes queued: a write's completion wakes it
  workers,  // its share of the worker queue taken: one of its blocking calls' end wakes it
  check,    // an asynchronous interceptor decides on the request at its head: its answer wakes it
};

struct verdict {
  enum class kind : std::uint8_t { admit, pause, refuse, fail };
  kind what = kind::admit;
  pause_reason reason = pause_reason::memory;
  rpc_errc code = rpc_errc::ok;
  std::size_t need = 0;  // pause(memory): the bytes to wait for
  std::string message;   // refuse, fail

  static verdict admit() { return {}; }
  static verdict pause(pause_reason r, std::size_t need = 0) {
    return {kind::pause, r, rpc_errc::ok, need, {}};
  }
  static verdict refuse(rpc_errc code, std::string message) {
    return {kind::refuse, pause_reason::memory, code, 0, std::move(message)};
  }
  static verdict fail(std::string message) {
    return {kind::fail, pause_reason::memory, rpc_errc::protocol_error, 0, std::move(message)};
  }
  bool admitted() const noexcept { return what == kind::admit; }
};

}  // namespace corvid::detail
