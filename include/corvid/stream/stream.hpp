#pragma once
// stream<T>: what a streaming handler returns. A coroutine that produces items with co_yield;
// each item leaves as a frame of its own, and a co_yield whose stream has no credit left (the
// consumer is behind) suspends until the consumer grants more: a producer never buffers ahead
// of its consumer.
//
//   corvid::stream<int> count_to(int n) {
//     for (int i = 1; i <= n; ++i) co_yield i;   // a throw ends the stream with handler_error
//   }
//
// Once the stream is cancelled (the client cancelled it or went away), the next co_yield
// does not return: the coroutine is destroyed there, running its locals' destructors.
#include <concepts>
#include <coroutine>
#include <exception>
#include <optional>
#include <utility>

#include "corvid/detail/frame_allocator.hpp"

namespace corvid {

template <class T>
class stream;

namespace detail {

// Where a stream's items go: the server's stream call, on the connection's reactor.
template <class T>
class item_sink {
 public:
  // Sends `item` now and returns true if the stream may send (credit left, room in the
  // connection's queue). Otherwise returns false: the coroutine `h` stays suspended and the
  // sink resumes it once the item is sent (or destroys it if the stream is cancelled).
  virtual bool send_or_park(T& item, std::coroutine_handle<> h) = 0;
  // The coroutine reached its end (`error`: it threw); it is suspended, and the sink
  // destroys it.
  virtual void finished(std::coroutine_handle<> h, std::exception_ptr error) noexcept = 0;

 protected:
  ~item_sink() = default;
};

template <class T>
struct stream_promise : pooled {
  item_sink<T>* sink = nullptr;
  std::optional<T> staged;  // the item of the co_yield in progress
  std::exception_ptr error;

  stream<T> get_return_object() noexcept;
  std::suspend_always initial_suspend() const noexcept { return {}; }

  struct yield_awaiter {
    stream_promise& p;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) { return !p.sink->send_or_park(*p.staged, h); }
    void await_resume() noexcept { p.staged.reset(); }
  };
  template <class U>
    requires std::constructible_from<T, U&&>
  yield_awaiter yield_value(U&& item) {
    staged.emplace(std::forward<U>(item));
    return yield_awaiter{*this};
  }

  struct final_awaiter {
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<stream_promise> h) noexcept {
      h.promise().sink->finished(h, h.promise().error);
    }
    void await_resume() const noexcept {}
  };
  final_awaiter final_suspend() const noexcept { return {}; }
  void return_void() const noexcept {}
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

}  // namespace detail

template <class T>
class [[nodiscard]] stream {
 public:
  using promise_type = detail::stream_promise<T>;
  using item_type = T;

  stream() = default;
  explicit stream(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  stream(stream&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  stream& operator=(stream&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream() {
    if (h_) h_.destroy();
  }

  // The server's stream call takes the coroutine over (it has not started yet).
  std::coroutine_handle<promise_type> release() noexcept { return std::exchange(h_, {}); }

 private:
  std::coroutine_handle<promise_type> h_;
};

namespace detail {
template <class T>
stream<T> stream_promise<T>::get_return_object() noexcept {
  return stream<T>{std::coroutine_handle<stream_promise<T>>::from_promise(*this)};
}
}  // namespace detail

}  // namespace corvid
