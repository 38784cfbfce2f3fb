#pragma once
// sync_wait(task): runs a task to completion from ordinary code, blocking the calling thread,
// and returns its value or rethrows what the task threw (co_await task does the same).
// sync_wait(awaitable) does the same for anything else co_await takes (a connection's or a
// pool's call). Never call it on a reactor thread: the reactor would wait on itself.
#include <concepts>
#include <condition_variable>
#include <coroutine>
#include <exception>
#include <mutex>
#include <optional>
#include <type_traits>

#include "corvid/detail/detached.hpp"
#include "corvid/task.hpp"

namespace corvid {
namespace detail {

struct sync_wait_state {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;

  void finish() {
    // Notify under the lock: the waiter may destroy this object as soon as it sees `done`.
    std::lock_guard lk(m);
    done = true;
    cv.notify_one();
  }
  void wait() {
    std::unique_lock lk(m);
    cv.wait(lk, [&] { return done; });
  }
};

template <class T>
detached sync_wait_driver(task<T>& t, std::optional<T>& out, sync_wait_state& st) {
  try {
    out.emplace(co_await t);
  } catch (...) {
    st.error = std::current_exception();
  }
  st.finish();
}

template <class A>
auto await_in_task(A awaitable) -> task<decltype(std::declval<A&>().await_resume())> {
  co_return co_await std::move(awaitable);
}

inline detached sync_wait_driver_void(task<void>& t, sync_wait_state& st) {
  try {
    co_await t;
  } catch (...) {
    st.error = std::current_exception();
  }
  st.finish();
}

}  // namespace detail

template <class T>
T sync_wait(task<T> t) {
  detail::sync_wait_state st;
  if constexpr (std::is_void_v<T>) {
    detail::sync_wait_driver_void(t, st);
    st.wait();
    if (st.error) std::rethrow_exception(st.error);
  } else {
    std::optional<T> out;
    detail::sync_wait_driver(t, out, st);
    st.wait();
    if (st.error) std::rethrow_exception(st.error);
    return std::move(*out);
  }
}

template <class A>
  requires requires(A& a, std::coroutine_handle<> h) {
    { a.await_ready() } -> std::convertible_to<bool>;
    a.await_suspend(h);
    a.await_resume();
  }
auto sync_wait(A awaitable) {
  return sync_wait(detail::await_in_task(std::move(awaitable)));
}

}  // namespace corvid
