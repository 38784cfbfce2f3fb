#pragma once
// The client's state of one stream: a call (filed under its request id, ended by the
// server's reply, a deadline, a cancel or the connection's loss, like any call) that also
// receives items (its inbox) and/or sends them within the credit the server grants.
#include <coroutine>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "corvid/client/call_state.hpp"
#include "corvid/detail/request_encoder.hpp"
#include "corvid/detail/stream_inbox.hpp"
#include "corvid/export.hpp"
#include "corvid/protocol/frame_header.hpp"

namespace corvid::detail {

class client_stream;

// What a client stream asks of its connection (client_connection). Any thread.
class CORVID_API stream_sender {
 public:
  // Queues one item frame of `s`. An error when the connection is closed or the item is
  // larger than max_frame_size.
  virtual rpc_error send_item(client_stream* s, const request_encoder& encode) = 0;
  virtual void send_credit(client_stream* s, std::uint32_t bytes) noexcept = 0;
  // The client writes no more items (a stream_end frame).
  virtual void close_writes(client_stream* s) noexcept = 0;
  // Ends the stream with `cancelled` and tells the server (a cancel frame).
  virtual void cancel_stream(client_stream* s) noexcept = 0;
  // Resumes `h` on the connection's reactor.
  virtual void resume_later(std::coroutine_handle<> h) noexcept = 0;

 protected:
  ~stream_sender() = default;
};

class CORVID_API client_stream final : public call_base, public stream_inbox {
 public:
  // `bare_strings`: the reader's items are std::string (stream_inbox). A window beyond the
  // protocol's initial credit is granted right behind the request.
  client_stream(std::shared_ptr<stream_sender> sender, bool bare_strings, std::size_t window,
                std::size_t max_window) noexcept;

  client_stream* as_stream() noexcept override { return this; }
  // Whether its connection filed it (gave it a request id): a stream refused at submission
  // (not connected, too large, client_busy) never was. The submitting thread, after submitting.
  bool filed() const noexcept;

  // ---- the connection (reactor) ----
  void set_reply(rpc_errc status, std::string_view body, std::string_view) noexcept override;
  void set_error(rpc_error e) noexcept override;
  void on_item(std::string_view body) noexcept;
  void on_credit(std::uint32_t bytes) noexcept;

  // ---- stream_inbox ----
  void grant(std::uint32_t bytes) noexcept override;
  void abandon() noexcept override;
  void retain() noexcept override { add_ref(); }
  void release() noexcept override { call_base::release(); }

  // ---- the writer (any thread) ----
  enum class credit { go, wait, ended };
  // Takes `cost` bytes of credit if any is left (the last item may overshoot it).
  credit take_credit(std::size_t cost) noexcept;
  // Registers `h` to resume when credit arrives or the stream ends; false if either already
  // happened (then do not suspend).
  bool park_writer(std::coroutine_handle<> h) noexcept;
  rpc_error send(const request_encoder& encode) { return sender_->send_item(this, encode); }
  void close_writes() noexcept;
  void cancel() noexcept { sender_->cancel_stream(this); }
  // Why the stream ended, or falsy; and the reply's body (a client-streaming handler's
  // result) once it ended cleanly.
  rpc_error end_error() const;
  std::string take_result();
  bool finished() const;

 private:
  void finish(rpc_error e, bool discard) noexcept;
  void wake_writer() noexcept;
  std::shared_ptr<stream_sender> sender_;
  mutable std::mutex mutex_;
  std::int64_t credit_ = 0;  // the server grants it when the handler starts
  std::coroutine_handle<> writer_;
  bool writes_closed_ = false;
  bool finished_ = false;
  rpc_error end_error_;
  std::string result_;
};

}  // namespace corvid::detail
