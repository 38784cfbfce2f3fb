#pragma once
// The client's writing ends of a stream (rpc_client::open_stream<f>()).
//
//   auto up = co_await client.open_stream<upload>();   // expected<stream_writer<...>, rpc_error>
//   if (auto e = co_await up->write("abc")) { /* the stream ended: e says why */ }
//   auto total = co_await up->finish();                // expected<R, rpc_error>
//
// write() waits while the server has granted no credit (its handler has not caught up), so
// a fast writer never buffers ahead of a slow handler. Dropping a writer before finish()
// (or cancel()) cancels the stream.
#include <coroutine>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "corvid/client/stream_call.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/codec/sink.hpp"
#include "corvid/expected.hpp"
#include "corvid/stream/stream_reader.hpp"

namespace corvid {

namespace detail {

// co_await writes one item: waits for credit, then queues it. Yields an rpc_error, falsy
// on success.
template <class In>
class write_awaiter {
 public:
  write_awaiter(client_stream* s, const In& item) : s_(s), item_(item) {}
  bool await_ready() { return s_ == nullptr || try_write(false); }
  bool await_suspend(std::coroutine_handle<> h) { return s_->park_writer(h) || !try_write(false); }
  rpc_error await_resume() {
    if (!done_) try_write(true);
    return std::move(result_);
  }

 private:
  bool try_write(bool force) {
    if (s_ == nullptr) {
      result_ = rpc_error(rpc_errc::invalid_argument, "empty stream writer");
      return done_ = true;
    }
    const std::size_t cost = protocol::stream_item_cost(codec::encoded_size(item_));
    switch (s_->take_credit(cost)) {
      case client_stream::credit::wait:
        if (!force) return false;
        break;  // woken without credit: send anyway (one item of overshoot)
      case client_stream::credit::ended: {
        rpc_error e = s_->end_error();
        result_ = e ? std::move(e)
                    : rpc_error(rpc_errc::invalid_argument,
                                s_->finished() ? "the stream has ended (its handler returned)"
                                               : "stream writes already closed");
        return done_ = true;
      }
      case client_stream::credit::go:
        break;
    }
    auto encode = [&](auto& out) {
      codec::encode(out, item_);
    };
    result_ = s_->send(encoder_for(encode));
    return done_ = true;
  }
  client_stream* s_;
  const In& item_;
  rpc_error result_;
  bool done_ = false;
};

// co_await: the stream's result once it has ended (expected<R, rpc_error>).
template <class R>
class finish_awaiter {
 public:
  explicit finish_awaiter(client_stream* s) noexcept : s_(s) {}
  bool await_ready() const noexcept { return s_ == nullptr || s_->done(); }
  bool await_suspend(std::coroutine_handle<> h) noexcept { return s_->wait(h); }
  expected<R, rpc_error> await_resume() {
    if (s_ == nullptr) return unexpected(rpc_error(rpc_errc::invalid_argument, "empty stream"));
    if (rpc_error e = s_->end_error()) return unexpected(std::move(e));
    const std::string body = s_->take_result();
    if constexpr (std::is_void_v<R>) {
      if (!body.empty()) {
        return unexpected(rpc_error(rpc_errc::protocol_error, "reply to a void stream has a body"));
      }
      return {};
    } else {
      R value{};
      if (codec::decode(std::string_view(body), value) != codec::decode_errc::ok) {
        return unexpected(rpc_error(rpc_errc::protocol_error, "stream result does not decode"));
      }
      return value;
    }
  }

 private:
  client_stream* s_;
};

// Shared by the writer types: one reference to the stream, cancelled if dropped unfinished.
class stream_handle {
 public:
  stream_handle() = default;
  explicit stream_handle(client_stream* s) noexcept : s_(s) {}
  stream_handle(stream_handle&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  stream_handle& operator=(stream_handle&& o) noexcept {
    if (this != &o) {
      drop();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  ~stream_handle() { drop(); }
  client_stream* get() const noexcept { return s_; }

 private:
  void drop() noexcept {
    if (s_ == nullptr) return;
    if (!s_->done()) s_->cancel();
    std::exchange(s_, nullptr)->release();
  }
  client_stream* s_ = nullptr;
};

}  // namespace detail

// Client streaming: write items, then finish() for the handler's result.
template <class In, class R>
class stream_writer {
 public:
  explicit stream_writer(detail::client_stream* s) noexcept : s_(s) {}
  detail::write_awaiter<In> write(const In& item) { return {s_.get(), item}; }
  // No more items; the handler's reader sees the end.
  void close_writes() noexcept {
    if (s_.get() != nullptr) s_.get()->close_writes();
  }
  // Closes the writes and waits for the handler's result.
  detail::finish_awaiter<R> finish() {
    close_writes();
    return detail::finish_awaiter<R>(s_.get());
  }
  void cancel() noexcept {
    if (s_.get() != nullptr) s_.get()->cancel();
  }

 private:
  detail::stream_handle s_;
};

// Both ways at once: write() and close_writes() like a stream_writer, next() and error()
// like a stream_reader.
template <class In, class Out>
class duplex_stream {
 public:
  explicit duplex_stream(detail::client_stream* s) noexcept : s_(s), reader_(retained(s)) {}
  detail::write_awaiter<In> write(const In& item) { return {s_.get(), item}; }
  void close_writes() noexcept {
    if (s_.get() != nullptr) s_.get()->close_writes();
  }
  auto next() noexcept { return reader_.next(); }
  rpc_error error() const { return reader_.error(); }
  void cancel() noexcept {
    if (s_.get() != nullptr) s_.get()->cancel();
  }

 private:
  static detail::stream_inbox* retained(detail::client_stream* s) noexcept {
    s->retain();
    return s;
  }
  detail::stream_handle s_;
  stream_reader<Out> reader_;
};

}  // namespace corvid
