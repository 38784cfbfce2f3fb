#pragma once
// Signature fingerprints: a 16-bit hash of a function's parameter and result types in a
// canonical form, computed at compile time on both sides. A request carries its caller's
// (frame header, offset 6); a server whose handler has another answers signature_mismatch
// instead of decoding bytes laid out for different types.
//
// The canonical form names each type by its wire format, so types that share one share a form
// (std::string, std::string_view and byte spans are all "bytes"; a map and an unordered_map of
// the same types agree). An evolvable struct contributes only its qualified name: it may gain
// trailing fields without changing any signature that holds it. A frozen struct contributes its
// name and its fields, an enum its name and underlying type (so enumerators may be added).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>

#include <boost/pfr.hpp>

#include "corvid/codec/traits.hpp"
#include "corvid/detail/function_traits.hpp"

namespace corvid::protocol {
namespace detail {

template <class T>
constexpr std::string_view raw_type_signature() noexcept {
  return __PRETTY_FUNCTION__;
}

// g++ spells the pretty name "... [with T = ns::point; std::string_view = ...]", clang
// "... [T = ns::point]"; both reduce to "ns::point".
constexpr std::string_view extract_type_name(std::string_view sig) noexcept {
  std::size_t start = sig.find("T = ");
  if (start == std::string_view::npos) return sig;
  start += 4;
  const std::size_t end = sig.find_first_of(";]", start);
  return sig.substr(start, end - start);
}

template <class T>
constexpr std::string_view type_name() noexcept {
  return extract_type_name(raw_type_signature<T>());
}

// FNV-1a, 64 bits, over the canonical form as it is produced.
struct fingerprint_hasher {
  std::uint64_t h = 14695981039346656037ull;
  constexpr void add(std::string_view s) noexcept {
    for (const char c : s) {
      h ^= static_cast<std::uint8_t>(c);
      h *= 1099511628211ull;
    }
  }
  constexpr void add_number(std::size_t n) noexcept {
    char digits[20] = {};
    std::size_t i = 0;
    do {
      digits[i++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    while (i != 0) add(std::string_view(&digits[--i], 1));
  }
};

// Writes T's canonical form to h (anything with add(string_view) and add_number(size_t): the
// hasher, or a string for corvid::describe_schema).
template <class T, class Out>
constexpr void add_type(Out& h);
template <class T, class Out>
constexpr void add_plain_type(Out& h);

template <class... Ts, class Out>
constexpr void add_list(Out& h, std::string_view separator) {
  bool first = true;
  ((h.add(first ? std::string_view() : separator), first = false,
    add_type<std::remove_cvref_t<Ts>>(h)),
   ...);
  static_cast<void>(first);
  static_cast<void>(separator);  // unused for an empty list
}

template <class T, class Out>
constexpr void add_type(Out& h) {
  using codec::detail::kind;
  if constexpr (corvid::detail::stream_of<T>::value) {
    h.add("stream ");
    add_type<std::remove_cvref_t<typename corvid::detail::stream_of<T>::item>>(h);
  } else if constexpr (corvid::detail::reader_of<T>::value) {
    h.add("stream ");
    add_type<std::remove_cvref_t<typename corvid::detail::reader_of<T>::item>>(h);
  } else {
    add_plain_type<T>(h);
  }
}

template <class T, class Out>
constexpr void add_plain_type(Out& h) {
  using codec::detail::kind;
  constexpr kind k = codec::detail::kind_v<T>;
  if constexpr (std::is_void_v<T>) {
    h.add("void");
  } else if constexpr (std::is_enum_v<T>) {
    h.add("enum ");
    h.add(type_name<T>());
    h.add(":");
    add_type<std::underlying_type_t<T>>(h);
  } else if constexpr (k == kind::boolean) {
    h.add("bool");
  } else if constexpr (k == kind::scalar) {
    h.add(std::is_floating_point_v<T> ? "f" : std::is_signed_v<T> ? "i" : "u");
    h.add_number(8 * sizeof(T));
  } else if constexpr (k == kind::string || k == kind::string_view || k == kind::byte_span) {
    h.add("bytes");
  } else if constexpr (k == kind::span || k == kind::vector) {
    if constexpr (codec::detail::is_byte_element<typename T::value_type>) {
      h.add("bytes");  // vector<char> has the bytes of a string
    } else {
      h.add("[");
      add_type<typename T::value_type>(h);
      h.add("]");
    }
  } else if constexpr (k == kind::bool_vector) {
    h.add("[bool]");
  } else if constexpr (k == kind::array) {
    h.add("[");
    add_type<typename T::value_type>(h);
    h.add(";");
    h.add_number(std::tuple_size_v<T>);
    h.add("]");
  } else if constexpr (k == kind::map) {
    h.add("{");
    add_type<typename T::key_type>(h);
    h.add(":");
    add_type<typename T::mapped_type>(h);
    h.add("}");
  } else if constexpr (k == kind::set) {
    h.add("{");
    add_type<typename T::key_type>(h);
    h.add("}");
  } else if constexpr (k == kind::optional) {
    h.add("?");
    add_type<typename T::value_type>(h);
  } else if constexpr (k == kind::variant) {
    h.add("<");
    [&]<class... A>(std::variant<A...>*) {
      add_list<A...>(h, "|");
    }(static_cast<T*>(nullptr));
    h.add(">");
  } else if constexpr (k == kind::empty) {
    h.add("()");
  } else if constexpr (k == kind::tuple) {
    h.add("(");
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      add_list<std::tuple_element_t<I, T>...>(h, ",");
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
    h.add(")");
  } else if constexpr (codec::detail::is_evolvable_v<T>) {
    h.add("struct ");
    h.add(type_name<T>());
  } else if constexpr (k == kind::aggregate) {
    h.add("frozen ");
    h.add(type_name<T>());
    h.add("{");
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      add_list<boost::pfr::tuple_element_t<I, T>...>(h, ",");
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    h.add("}");
  } else {
    h.add("?unsupported");  // rejected by the codec before any call is made
  }
}

template <class Params, class Result>
constexpr std::uint16_t fingerprint() noexcept {
  fingerprint_hasher h;
  h.add("(");
  [&]<class... P>(std::tuple<P...>*) {
    add_list<P...>(h, ",");
  }(static_cast<Params*>(nullptr));
  h.add(")->");
  add_type<std::remove_cvref_t<Result>>(h);
  std::uint64_t x = h.h ^ (h.h >> 32);
  x ^= x >> 16;
  const auto s = static_cast<std::uint16_t>(x);
  return s == 0 ? 1 : s;  // 0 on the wire means "not stated"
}

}  // namespace detail

// The signature fingerprint of handler F: never 0. A variable, so that it is a constant even
// where it is used in a runtime expression.
template <auto F>
inline constexpr std::uint16_t signature_v =
    detail::fingerprint<corvid::detail::schema_params_t<F>,
                        typename corvid::detail::function_traits<decltype(F)>::result_type>();

}  // namespace corvid::protocol
