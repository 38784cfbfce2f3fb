#pragma once
// stream_reader<T>: the receiving end of a stream, on either side. A client gets one from
// rpc_client::stream<f>() (the items a handler yields); a handler whose last parameter is a
// stream_reader<T> reads the items the client writes.
//
//   while (auto item = co_await reader.next()) use(*item);   // std::nullopt: the end
//   if (auto e = reader.error()) { /* why it ended early */ }
//
// Taking an item grants its bytes back to the sender as credit. Dropping a reader (or
// cancel()) before the end cancels the stream. One consumer at a time.
#include <coroutine>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "corvid/codec/codec.hpp"
#include "corvid/detail/stream_inbox.hpp"
#include "corvid/error.hpp"

namespace corvid {

template <class T>
class stream_reader {
 public:
  stream_reader() = default;
  // Takes over one reference to `inbox`.
  explicit stream_reader(detail::stream_inbox* inbox) noexcept : in_(inbox) {}
  stream_reader(stream_reader&& o) noexcept : in_(std::exchange(o.in_, nullptr)) {}
  stream_reader& operator=(stream_reader&& o) noexcept {
    if (this != &o) {
      drop();
      in_ = std::exchange(o.in_, nullptr);
    }
    return *this;
  }
  stream_reader(const stream_reader&) = delete;
  stream_reader& operator=(const stream_reader&) = delete;
  ~stream_reader() { drop(); }

  class next_awaiter {
   public:
    explicit next_awaiter(detail::stream_inbox* in) noexcept : in_(in) {}
    bool await_ready() { return in_ == nullptr || try_take(nullptr); }
    bool await_suspend(std::coroutine_handle<> h) { return !try_take(h); }
    std::optional<T> await_resume() {
      if (!got_ && in_ != nullptr) try_take(nullptr);  // woken: take what woke us
      return std::move(item_);
    }

   private:
    // True when done (an item, or the end); false when `h` was registered to wait.
    bool try_take(std::coroutine_handle<> h) {
      std::string body;
      switch (in_->pull(body, h)) {
        case detail::stream_inbox::pulled::wait:
          return false;
        case detail::stream_inbox::pulled::ended:
          got_ = true;
          return true;
        case detail::stream_inbox::pulled::item:
          break;
      }
      got_ = true;
      if constexpr (std::is_same_v<T, std::string>) {
        if (in_->bare_strings()) {  // kept without its prefix: the item as it is
          item_.emplace(std::move(body));
          return true;
        }
      }
      T value{};
      if (codec::decode(std::string_view(body), value) != codec::decode_errc::ok) {
        // The sender's item does not decode as T: the stream cannot go on.
        if (auto w = in_->end(rpc_error(rpc_errc::protocol_error,
                                        "stream item does not decode as the reader's type"))) {
          w.resume();
        }
        in_->abandon();
        return true;
      }
      item_.emplace(std::move(value));
      return true;
    }
    detail::stream_inbox* in_;
    std::optional<T> item_;
    bool got_ = false;
  };

  // co_await: the next item, or std::nullopt once the stream has ended (see error()).
  next_awaiter next() noexcept { return next_awaiter(in_); }
  // Why the stream ended, if not cleanly (falsy while it runs and after a clean end).
  rpc_error error() const {
    return in_ == nullptr ? rpc_error(rpc_errc::invalid_argument, "empty stream_reader")
                          : in_->error();
  }
  // Ends the stream from this side: the sender is told, and next() ends with `cancelled`.
  void cancel() {
    if (in_ != nullptr && !in_->ended()) {
      if (auto w =
              in_->end(rpc_error(rpc_errc::cancelled, "stream cancelled by its reader"), true)) {
        w.resume();
      }
      in_->abandon();
    }
  }

 private:
  void drop() noexcept {
    if (in_ == nullptr) return;
    if (!in_->ended()) {
      static_cast<void>(in_->end(rpc_error(rpc_errc::cancelled, "stream reader dropped"), true));
      in_->abandon();
    }
    std::exchange(in_, nullptr)->release();
  }
  detail::stream_inbox* in_ = nullptr;
};

}  // namespace corvid
