#pragma once
// What a handler's own signature says: its parameters (the wire schema), whether it wants a
// request_context, and what it returns. Both the server (decode args, encode result) and the
// client (check args at compile time, decode the result) read the schema from here.
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "corvid/task.hpp"

namespace corvid {
class request_context;
}

namespace corvid::detail {

template <class T>
struct is_task : std::false_type {};
template <class T>
struct is_task<task<T>> : std::true_type {};

// What awaiting a handler's return value produces: T for task<T>, R otherwise.
template <class R>
struct task_result {
  using type = R;
};
template <class T>
struct task_result<task<T>> {
  using type = T;
};

template <class R, class C, class... Args>
struct signature {
  using return_type = R;
  using class_type = C;  // void for free functions
  static constexpr bool is_coroutine = is_task<R>::value;
  // What the handler produces once awaited.
  using result_type = typename task_result<R>::type;
  using params = std::tuple<Args...>;
  static constexpr bool wants_context =
      sizeof...(Args) > 0 &&
      std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, std::tuple<Args..., void>>>,
                     request_context>;
};

template <class F>
struct function_traits;
template <class R, class... A>
struct function_traits<R (*)(A...)> : signature<R, void, A...> {};
template <class R, class... A>
struct function_traits<R (*)(A...) noexcept> : signature<R, void, A...> {};
template <class R, class C, class... A>
struct function_traits<R (C::*)(A...)> : signature<R, C, A...> {};
template <class R, class C, class... A>
struct function_traits<R (C::*)(A...) const> : signature<R, C, A...> {};
template <class R, class C, class... A>
struct function_traits<R (C::*)(A...) noexcept> : signature<R, C, A...> {};
template <class R, class C, class... A>
struct function_traits<R (C::*)(A...) const noexcept> : signature<R, C, A...> {};

template <bool DropFirst, class Tuple>
struct wire_params {
  using type = Tuple;
};
template <class First, class... Rest>
struct wire_params<true, std::tuple<First, Rest...>> {
  using type = std::tuple<Rest...>;
};

// The parameters that travel on the wire (a leading request_context& does not).
template <auto F>
using wire_params_t = typename wire_params<function_traits<decltype(F)>::wants_context,
                                           typename function_traits<decltype(F)>::params>::type;

template <class Tuple>
struct decay_tuple;
template <class... T>
struct decay_tuple<std::tuple<T...>> {
  using type = std::tuple<std::remove_cvref_t<T>...>;
};
// The values the server decodes the wire into (string_view params view the request bytes).
template <auto F>
using decoded_args_t = typename decay_tuple<wire_params_t<F>>::type;

// View return types arrive at the client as owning types.
template <class T>
struct owning {
  using type = std::remove_cvref_t<T>;
};
template <>
struct owning<std::string_view> {
  using type = std::string;
};
template <class T, std::size_t N>
struct owning<std::span<T, N>> {
  using type = std::vector<std::remove_cv_t<T>>;
};
template <auto F>
using client_result_t = typename owning<typename function_traits<decltype(F)>::result_type>::type;

}  // namespace corvid::detail
