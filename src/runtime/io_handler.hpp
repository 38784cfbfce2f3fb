#pragma once
// A move-only completion handler, void(const std::error_code&, std::size_t), stored inline:
// the connections' read and write lambdas (a shared_ptr and an epoch) fit in its buffer, so
// starting an RDMA read or write allocates nothing.
#include <cstddef>
#include <new>
#include <system_error>
#include <type_traits>
#include <utility>

namespace corvid::detail {

class io_handler {
 public:
  io_handler() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, io_handler>>>
  io_handler(F&& f) {  // NOLINT: implicit, like std::function
    using T = std::decay_t<F>;
    static_assert(sizeof(T) <= capacity && alignof(T) <= alignof(std::max_align_t),
                  "handler too large for io_handler's inline storage");
    static_assert(std::is_nothrow_move_constructible_v<T>);
    ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
    ops_ = &ops_for<T>;
  }
  io_handler(io_handler&& o) noexcept { take(o); }
  io_handler& operator=(io_handler&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  ~io_handler() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  // Calls the handler once; it is gone (moved out) before it runs, so it may start the
  // next operation, which stores a new handler here.
  void operator()(const std::error_code& ec, std::size_t n) {
    io_handler self(std::move(*this));
    self.ops_->call(self.storage_, ec, n);
  }
  void reset() noexcept {
    if (ops_ != nullptr) ops_->destroy(storage_);
    ops_ = nullptr;
  }

 private:
  static constexpr std::size_t capacity = 48;
  struct ops {
    void (*call)(void*, const std::error_code&, std::size_t);
    void (*move)(void* from, void* to) noexcept;
    void (*destroy)(void*) noexcept;
  };
  template <class T>
  static constexpr ops ops_for = {
      [](void* p, const std::error_code& ec, std::size_t n) { (*static_cast<T*>(p))(ec, n); },
      [](void* from, void* to) noexcept {
        ::new (to) T(std::move(*static_cast<T*>(from)));
        static_cast<T*>(from)->~T();
      },
      [](void* p) noexcept {
        static_cast<T*>(p)->~T();
      }};
  void take(io_handler& o) noexcept {
    if (o.ops_ == nullptr) return;
    o.ops_->move(o.storage_, storage_);
    ops_ = std::exchange(o.ops_, nullptr);
  }

  alignas(std::max_align_t) unsigned char storage_[capacity];
  const ops* ops_ = nullptr;
};

}  // namespace corvid::detail
