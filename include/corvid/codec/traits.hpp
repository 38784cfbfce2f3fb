#pragma once
// Sorts every C++ type into the wire-format family (kind) that encodes it. encode, decode and
// the size functions all dispatch on kind_v, so the supported set is decided here only. Also
// the compile-time loop helpers they share.
#include <array>
#include <bit>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <boost/pfr.hpp>

#include "corvid/codec/layout.hpp"

// Fixed-width values are copied as they sit in memory, which is the wire format only here.
static_assert(std::endian::native == std::endian::little,
              "corvid::codec assumes a little-endian host");
static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559,
              "corvid::codec assumes IEEE 754 float and double");

namespace corvid::codec::detail {

enum class kind {
  unsupported,
  boolean,      // bool, or an enum whose underlying type is bool: one byte, 0 or 1
  scalar,       // integers, float, double, enums: fixed width, little-endian
  string,       // std::string: varint length + bytes
  string_view,  // std::string_view: as string, decoded zero-copy
  byte_span,    // span<const char/unsigned char/std::byte>: as string, decoded zero-copy
  span,         // span<const T> for other T: as vector<T>, encode-only
  vector,       // std::vector<T>, T != bool: varint count + elements
  bool_vector,  // std::vector<bool>: varint count + one 0/1 byte per element
  array,        // std::array<T, N>: N elements, no count
  map,          // std::map / std::unordered_map: varint count + key, value pairs
  set,          // std::set / std::unordered_set: varint count + elements
  optional,     // u8 0/1 + value
  variant,      // varint index + alternative
  empty,        // std::monostate: no bytes
  tuple,        // std::tuple / std::pair: elements in order, no prefix
  aggregate,    // plain aggregate struct, via Boost.PFR: varint byte length + fields in order
                // (evolvable), or the fields alone when the type opts into the frozen layout
};

template <class T>
struct is_std_string : std::false_type {};
template <class A>
struct is_std_string<std::basic_string<char, std::char_traits<char>, A>> : std::true_type {};

template <class T>
struct is_const_span : std::false_type {};
template <class U>
struct is_const_span<std::span<const U>> : std::true_type {};

template <class T>
struct is_vector : std::false_type {};
template <class U, class A>
struct is_vector<std::vector<U, A>> : std::true_type {};

template <class T>
struct is_std_array : std::false_type {};
template <class U, std::size_t N>
struct is_std_array<std::array<U, N>> : std::true_type {};

template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class K, class V, class H, class E, class A>
struct is_map<std::unordered_map<K, V, H, E, A>> : std::true_type {};

template <class T>
struct is_set : std::false_type {};
template <class K, class C, class A>
struct is_set<std::set<K, C, A>> : std::true_type {};
template <class K, class H, class E, class A>
struct is_set<std::unordered_set<K, H, E, A>> : std::true_type {};

template <class T>
struct is_optional : std::false_type {};
template <class U>
struct is_optional<std::optional<U>> : std::true_type {};

template <class T>
struct is_variant : std::false_type {};
template <class... Us>
struct is_variant<std::variant<Us...>> : std::true_type {};

template <class T>
struct is_tuple : std::false_type {};
template <class... Us>
struct is_tuple<std::tuple<Us...>> : std::true_type {};
template <class A, class B>
struct is_tuple<std::pair<A, B>> : std::true_type {};

// wchar_t and long double are left out on purpose: their width differs between platforms.
template <class T>
inline constexpr bool is_wire_integer =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, wchar_t>;

// Only enums with a fixed underlying type (`enum class e`, `enum e : std::uint8_t`) may hold
// every value of that type; decoding arbitrary bytes into any other enum would be UB.
template <class T>
concept fixed_enum = std::is_enum_v<T> && requires { T{std::underlying_type_t<T>{}}; };

template <class T>
inline constexpr bool is_byte_element =
    std::is_same_v<T, char> || std::is_same_v<T, unsigned char> || std::is_same_v<T, std::byte>;

template <class T>
consteval kind classify() {
  if constexpr (std::is_reference_v<T> || std::is_const_v<T> || std::is_volatile_v<T>) {
    return kind::unsupported;  // callers strip cv where it is harmless
  } else if constexpr (std::is_same_v<T, bool>) {
    return kind::boolean;
  } else if constexpr (is_wire_integer<T> || std::is_same_v<T, float> ||
                       std::is_same_v<T, double>) {
    return kind::scalar;
  } else if constexpr (std::is_enum_v<T>) {
    if constexpr (!fixed_enum<T>)
      return kind::unsupported;
    else if constexpr (std::is_same_v<std::underlying_type_t<T>, bool>)
      return kind::boolean;
    else if constexpr (is_wire_integer<std::underlying_type_t<T>>)
      return kind::scalar;
    else
      return kind::unsupported;
  } else if constexpr (is_std_string<T>::value) {
    return kind::string;
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    return kind::string_view;
  } else if constexpr (is_const_span<T>::value) {
    return is_byte_element<typename T::value_type> ? kind::byte_span : kind::span;
  } else if constexpr (is_vector<T>::value) {
    return std::is_same_v<typename T::value_type, bool> ? kind::bool_vector : kind::vector;
  } else if constexpr (is_std_array<T>::value) {
    return kind::array;
  } else if constexpr (is_map<T>::value) {
    return kind::map;
  } else if constexpr (is_set<T>::value) {
    return kind::set;
  } else if constexpr (is_optional<T>::value) {
    return kind::optional;
  } else if constexpr (is_variant<T>::value) {
    return kind::variant;
  } else if constexpr (std::is_same_v<T, std::monostate>) {
    return kind::empty;
  } else if constexpr (is_tuple<T>::value) {
    return kind::tuple;
  } else if constexpr (std::is_class_v<T> && std::is_aggregate_v<T>) {
    return kind::aggregate;
  } else {
    return kind::unsupported;
  }
}

// The kind of T, ignoring top-level const/volatile.
template <class T>
inline constexpr kind kind_v = classify<std::remove_cv_t<T>>();

// An aggregate in the evolvable layout (a byte length before its fields), as opposed to a frozen
// one (layout.hpp).
template <class T>
inline constexpr bool is_evolvable_v =
    kind_v<T> == kind::aggregate && !enable_frozen_layout<std::remove_cv_t<T>>;

// Calls f(std::integral_constant<std::size_t, I>{}...) for I in [0, N): compile-time loops.
template <std::size_t N, class F>
constexpr decltype(auto) with_indices(F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    return f(std::integral_constant<std::size_t, I>{}...);
  }(std::make_index_sequence<N>{});
}

// Calls f(std::integral_constant<std::size_t, I>{}) for the one I equal to index (< N): how a
// runtime variant index selects a compile-time alternative.
template <std::size_t N, class F>
void visit_index(std::size_t index, F&& f) {
  with_indices<N>([&](auto... i) { static_cast<void>(((index == i && (f(i), true)) || ...)); });
}

// Calls f(element) for each tuple element or aggregate field, in order (const or not).
template <class T, class F>
void for_each_member(T&& v, F&& f) {
  using U = std::remove_cvref_t<T>;
  if constexpr (kind_v<U> == kind::tuple) {
    std::apply([&](auto&&... e) { (f(e), ...); }, v);
  } else {
    boost::pfr::for_each_field(v, f);
  }
}

template <class T>
inline constexpr bool always_false = false;

}  // namespace corvid::codec::detail
