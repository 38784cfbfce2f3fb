#pragma once
// What a server connection tells a running stream call, on the connection's reactor: the
// stream's frames from the client, and the events a parked producer waits for.
#include <chrono>
#include <cstdint>
#include <string_view>

namespace corvid::detail {

class stream_link {
 public:
  // An item the client wrote.
  virtual void on_item(std::string_view body) = 0;
  // The client writes no more items.
  virtual void on_writes_closed() = 0;
  // The client granted `bytes` more credit.
  virtual void on_credit(std::uint32_t bytes) = 0;
  // The connection's reply queue has room again (after wait_writable).
  virtual void on_writable() = 0;
  // What was queued before wait_written() has been written, or never will be. Not inline.
  virtual void on_written() noexcept = 0;
  // The call was cancelled (cancel frame, deadline, connection closing). Must not finish
  // the call inline: the connection may be iterating its running calls.
  virtual void on_cancel() noexcept = 0;
  // Nothing moved on the stream for `limit` (server_config::stream_idle_timeout): it ends
  // with `timeout`. Like on_cancel, not inline.
  virtual void on_idle(std::chrono::milliseconds limit) noexcept = 0;

  // Items and credit either way, and the client's end: counted by the stream call as they
  // move, compared by the connection's idle check between its looks.
  std::uint64_t moved = 0;
  // The connection's: `moved` at its last look, and since when it has not changed.
  std::uint64_t moved_at_look = 0;
  std::chrono::steady_clock::time_point still_since{};

 protected:
  ~stream_link() = default;
};

}  // namespace corvid::detail
