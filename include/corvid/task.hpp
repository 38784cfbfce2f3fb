#pragma once
// corvid::task<T>: a lazy coroutine. Nothing runs until it is awaited; the awaiting coroutine
// resumes by symmetric transfer, so long chains never grow the stack. Frames come from the
// pooled frame allocator.
#include <coroutine>
#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

#include "corvid/detail/frame_allocator.hpp"

namespace corvid {

template <class T = void>
class task;

namespace detail {

struct task_promise_base : pooled {
  std::coroutine_handle<> continuation = std::noop_coroutine();

  struct final_awaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      return h.promise().continuation;
    }
    void await_resume() const noexcept {}
  };
  std::suspend_always initial_suspend() const noexcept { return {}; }
  final_awaiter final_suspend() const noexcept { return {}; }
};

template <class T>
struct task_promise : task_promise_base {
  std::variant<std::monostate, T, std::exception_ptr> result;

  task<T> get_return_object() noexcept;
  template <class U>
    requires std::is_convertible_v<U&&, T>
  void return_value(U&& v) {
    result.template emplace<1>(std::forward<U>(v));
  }
  void unhandled_exception() noexcept { result.template emplace<2>(std::current_exception()); }
  T take() {
    if (result.index() == 2) std::rethrow_exception(std::get<2>(result));
    return std::move(std::get<1>(result));
  }
};

template <>
struct task_promise<void> : task_promise_base {
  std::exception_ptr error;
  task<void> get_return_object() noexcept;
  void return_void() const noexcept {}
  void unhandled_exception() noexcept { error = std::current_exception(); }
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace detail

template <class T>
class [[nodiscard]] task {
 public:
  using promise_type = detail::task_promise<T>;
  using value_type = T;

  task() = default;
  explicit task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  task(task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  task& operator=(task&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() {
    if (h_) h_.destroy();
  }

  bool valid() const noexcept { return static_cast<bool>(h_); }

  struct awaiter {
    std::coroutine_handle<promise_type> h;
    bool await_ready() const noexcept { return !h || h.done(); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) noexcept {
      h.promise().continuation = caller;
      return h;
    }
    T await_resume() { return h.promise().take(); }
  };
  awaiter operator co_await() && noexcept { return awaiter{h_}; }
  awaiter operator co_await() & noexcept { return awaiter{h_}; }

 private:
  std::coroutine_handle<promise_type> h_;
};

namespace detail {
template <class T>
task<T> task_promise<T>::get_return_object() noexcept {
  return task<T>{std::coroutine_handle<task_promise<T>>::from_promise(*this)};
}
inline task<void> task_promise<void>::get_return_object() noexcept {
  return task<void>{std::coroutine_handle<task_promise<void>>::from_promise(*this)};
}
}  // namespace detail

}  // namespace corvid
