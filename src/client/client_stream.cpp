#include <algorithm>

#include "corvid/client/stream_call.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/protocol/frame_header.hpp"

#include "call_table.hpp"

namespace corvid::detail {

client_stream::client_stream(std::shared_ptr<stream_sender> sender, bool bare_strings,
                             std::size_t window, std::size_t max_window) noexcept
    : stream_inbox(window, max_window, bare_strings), sender_(std::move(sender)) {
  const std::size_t extra = window - std::min<std::size_t>(window, protocol::initial_stream_credit);
  slot_of(*this).extra_credit =
      static_cast<std::uint32_t>(std::min<std::size_t>(extra, UINT32_MAX));
}

bool client_stream::filed() const noexcept { return slot_of(*this).id != 0; }

void client_stream::set_reply(rpc_errc status, std::string_view body, std::string_view) noexcept {
  rpc_error e;
  try {
    if (status != rpc_errc::ok) {
      std::string message;
      if (codec::decode(body, message) != codec::decode_errc::ok) message.clear();
      e = rpc_error(status, std::move(message));
    } else {
      std::lock_guard lk(mutex_);
      result_.assign(body);
    }
  } catch (...) {  // bad_alloc
    e = rpc_error(rpc_errc::message_too_large, "out of memory for the stream's reply");
  }
  finish(std::move(e), false);  // the items before the reply were sent before it: kept
}

void client_stream::set_error(rpc_error e) noexcept {
  // Ended here (deadline, cancel, connection lost): what is buffered is not read first.
  finish(std::move(e), true);
}

void client_stream::finish(rpc_error e, bool discard) noexcept {
  {
    std::lock_guard lk(mutex_);
    if (finished_) return;
    finished_ = true;
    end_error_ = e;
  }
  // The connection may hold its lock here: the consumer and writer resume on the reactor.
  if (auto w = end(std::move(e), discard)) sender_->resume_later(w);
  wake_writer();
}

void client_stream::on_item(std::string_view body) noexcept {
  pushed result = pushed::over;
  std::coroutine_handle<> wake;
  try {
    result = push(body, wake);
  } catch (...) {  // bad_alloc
  }
  if (result == pushed::dropped) return;
  if (result == pushed::malformed || result == pushed::over) {
    // A bad item (or past our credit, or no memory for it) ends the stream here, after the
    // good items before it; the cancel tells the server.
    finish(rpc_error(rpc_errc::protocol_error,
                     result == pushed::malformed
                         ? "stream item does not decode as the reader's type"
                         : "server sent stream items past the client's credit"),
           false);
    sender_->cancel_stream(this);
    return;
  }
  if (wake) wake.resume();
}

void client_stream::on_credit(std::uint32_t bytes) noexcept {
  // The writer is taken with the credit it may use, in one critical section: one taken after
  // could be a writer that spent this credit already and parked for more.
  std::coroutine_handle<> w;
  {
    std::lock_guard lk(mutex_);
    credit_ += bytes;
    if (credit_ > 0) w = std::exchange(writer_, {});
  }
  if (w) sender_->resume_later(w);
}

void client_stream::wake_writer() noexcept {
  std::coroutine_handle<> w;
  {
    std::lock_guard lk(mutex_);
    w = std::exchange(writer_, {});
  }
  if (w) sender_->resume_later(w);
}

void client_stream::grant(std::uint32_t bytes) noexcept {
  if (!finished()) sender_->send_credit(this, bytes);
}

void client_stream::abandon() noexcept {
  if (!finished()) sender_->cancel_stream(this);
}

client_stream::credit client_stream::take_credit(std::size_t cost) noexcept {
  std::lock_guard lk(mutex_);
  if (finished_ || writes_closed_) return credit::ended;  // end_error() says which
  if (credit_ <= 0) return credit::wait;
  credit_ -= static_cast<std::int64_t>(cost);
  return credit::go;
}

bool client_stream::park_writer(std::coroutine_handle<> h) noexcept {
  std::lock_guard lk(mutex_);
  if (finished_ || writes_closed_ || credit_ > 0) return false;
  writer_ = h;
  return true;
}

void client_stream::close_writes() noexcept {
  {
    std::lock_guard lk(mutex_);
    if (finished_ || writes_closed_) return;
    writes_closed_ = true;
  }
  sender_->close_writes(this);
}

rpc_error client_stream::end_error() const {
  std::lock_guard lk(mutex_);
  return end_error_;
}

std::string client_stream::take_result() {
  std::lock_guard lk(mutex_);
  return std::move(result_);
}

bool client_stream::finished() const {
  std::lock_guard lk(mutex_);
  return finished_;
}

}  // namespace corvid::detail
