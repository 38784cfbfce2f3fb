#pragma once
// A fire-and-forget coroutine: starts at once and frees its own frame when it finishes.
// Used to drive tasks from callbacks (server handlers, sync_wait). Its body must catch
// everything: an escaping exception terminates, because nobody could observe it.
#include <coroutine>
#include <exception>

#include "corvid/detail/frame_allocator.hpp"

namespace corvid::detail {

struct detached {
  struct promise_type : pooled {
    detached get_return_object() const noexcept { return {}; }
    std::suspend_never initial_suspend() const noexcept { return {}; }
    std::suspend_never final_suspend() const noexcept { return {}; }
    void return_void() const noexcept {}
    [[noreturn]] void unhandled_exception() const noexcept { std::terminate(); }
  };
};

}  // namespace corvid::detail
