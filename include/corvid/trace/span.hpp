#pragma once
// A finished server span: what server_config::on_span hands to the user's tracer for each
// call that arrived with a trace context.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "corvid/error.hpp"
#include "corvid/trace/trace_context.hpp"

namespace corvid {

struct span {
  // The caller's trace id, this span's own id (what request_context::trace() showed the
  // handler, and what calls it made carried as their parent) and the caller's flags.
  trace_context context;
  std::array<std::uint8_t, 8> parent_span_id{};  // the caller's span
  std::string_view name;                         // the method's qualified name
  std::chrono::system_clock::time_point start;   // when the handler was dispatched
  std::chrono::nanoseconds duration{};           // to its reply (or its end, if none was sent)
  // ok, handler_error (it threw), cancelled (the caller gave up, or the connection closed;
  // no reply was sent), or the error the reply carried (server_busy, timeout, ...).
  rpc_errc status = rpc_errc::ok;
};

// Called on the connection's reactor thread as each traced call ends: keep it short (hand
// the span to a queue or an exporter's batching API); an exception it throws is dropped.
using span_exporter = std::function<void(const span&)>;

}  // namespace corvid
