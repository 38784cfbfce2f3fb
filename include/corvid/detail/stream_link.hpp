#pragma once
// What a server connection tells a running stream call, on the connection's reactor: the
// stream's frames from the client, and the events a parked producer waits for.
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
  // The call was cancelled (cancel frame, deadline, connection closing). Must not finish
  // the call inline: the connection may be iterating its running calls.
  virtual void on_cancel() noexcept = 0;

 protected:
  ~stream_link() = default;
};

}  // namespace corvid::detail
