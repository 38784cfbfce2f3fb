#pragma once
// What a handler's own signature says: its parameters (the wire schema), whether it wants a
// request_context, and what it returns. Both the server (decode args, encode result) and the
// client (check args at compile time, decode the result) read the schema from here.
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "corvid/task.hpp"

namespace corvid {
class request_context;
template <class T>
class stream;
template <class T>
class stream_reader;
}  // namespace corvid

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

// Streams: a handler returning stream<T> sends items of T; one whose last parameter is a
// stream_reader<U> receives items of U (corvid/stream/).
template <class T>
struct stream_of {
  static constexpr bool value = false;
  using item = void;
};
template <class T>
struct stream_of<stream<T>> {
  static constexpr bool value = true;
  using item = T;
};
template <class T>
struct reader_of {
  static constexpr bool value = false;
  using item = void;
};
template <class T>
struct reader_of<stream_reader<T>> {
  static constexpr bool value = true;
  using item = T;
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
  // The handler sends a stream of items (returns stream<T>).
  static constexpr bool streams_out = stream_of<R>::value;
  // The handler reads a stream of items (its last parameter is a stream_reader<U>).
  using last_param =
      std::remove_cvref_t<std::tuple_element_t<sizeof...(Args), std::tuple<void, Args...>>>;
  static constexpr bool streams_in = reader_of<last_param>::value;
  using out_item = typename stream_of<R>::item;          // void unless streams_out
  using in_item = typename reader_of<last_param>::item;  // void unless streams_in
  static constexpr bool is_stream = streams_out || streams_in;
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

// The parameters that make the function's schema: all but a leading request_context&.
template <auto F>
using schema_params_t = typename wire_params<function_traits<decltype(F)>::wants_context,
                                             typename function_traits<decltype(F)>::params>::type;

// The tuple without its last element (a stream_reader parameter is not in the request).
template <bool DropLast, class Tuple>
struct drop_last {
  using type = Tuple;
};
template <class Tuple, class Seq>
struct take_first;
template <class Tuple, std::size_t... I>
struct take_first<Tuple, std::index_sequence<I...>> {
  using type = std::tuple<std::tuple_element_t<I, Tuple>...>;
};
template <class... T>
struct drop_last<true, std::tuple<T...>> {
  using type =
      typename take_first<std::tuple<T...>, std::make_index_sequence<sizeof...(T) - 1>>::type;
};

// The parameters that travel in the request (a leading request_context& does not, nor a
// trailing stream_reader, whose items follow as frames of their own).
template <auto F>
using wire_params_t = typename drop_last<
    function_traits<decltype(F)>::streams_in,
    typename wire_params<function_traits<decltype(F)>::wants_context,
                         typename function_traits<decltype(F)>::params>::type>::type;

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

// Whether calling F opens a stream (its result or last parameter is one).
template <auto F>
inline constexpr bool is_stream_function =
    function_traits<decltype(F)>::streams_in || function_traits<decltype(F)>::streams_out;

}  // namespace corvid::detail
