#pragma once
// corvid::expected<T, E>: the C++23 std::expected subset corvid's API needs, for C++20 users.
// Every call result is an expected<T, rpc_error>: a failed call is a value, never an exception
// (README, "API in brief", lists what does throw: programming errors). value() and operator*
// on an expected holding an error throw std::bad_variant_access; test it first.
#include <type_traits>
#include <utility>
#include <variant>

namespace corvid {

template <class E>
class unexpected {
 public:
  explicit unexpected(E e) : error_(std::move(e)) {}
  const E& error() const& noexcept { return error_; }
  E& error() & noexcept { return error_; }
  E&& error() && noexcept { return std::move(error_); }

 private:
  E error_;
};

template <class T, class E>
class expected {
 public:
  using value_type = T;
  using error_type = E;

  expected()
    requires std::is_default_constructible_v<T>
      : v_(std::in_place_index<0>) {}
  template <class U = T>
    requires(std::is_constructible_v<T, U &&> &&
             !std::is_same_v<std::remove_cvref_t<U>, expected> &&
             !std::is_same_v<std::remove_cvref_t<U>, unexpected<E>>)
  expected(U&& v) : v_(std::in_place_index<0>, std::forward<U>(v)) {}
  expected(unexpected<E> u) : v_(std::in_place_index<1>, std::move(u).error()) {}

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }

  E& error() & { return std::get<1>(v_); }
  const E& error() const& { return std::get<1>(v_); }
  E&& error() && { return std::get<1>(std::move(v_)); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, E> v_;
};

// expected<void, E>: success carries nothing.
template <class E>
class expected<void, E> {
 public:
  using value_type = void;
  using error_type = E;
  expected() = default;
  expected(unexpected<E> u) : error_(std::move(u).error()), ok_(false) {}
  bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  void value() const {}
  void operator*() const noexcept {}
  E& error() & { return error_; }
  const E& error() const& { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  E error_{};
  bool ok_ = true;
};

}  // namespace corvid
