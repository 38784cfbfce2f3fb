#pragma once
// encodable / decodable: whether a type (and everything inside it, recursively) has a wire
// format, so callers can static_assert with a readable message instead of a template trace.
// owning_t: the type to decode into when the result must outlive the input bytes.
#include <concepts>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include <boost/pfr.hpp>

#include "corvid/codec/traits.hpp"

namespace corvid::codec {
namespace detail {

template <class T>
consteval bool encodable_impl() {
  constexpr kind k = kind_v<T>;
  if constexpr (k == kind::unsupported) {
    return false;
  } else if constexpr (k == kind::span || k == kind::vector || k == kind::array || k == kind::set ||
                       k == kind::optional) {
    return encodable_impl<typename T::value_type>();
  } else if constexpr (k == kind::map) {
    return encodable_impl<typename T::key_type>() && encodable_impl<typename T::mapped_type>();
  } else if constexpr (k == kind::variant) {
    return with_indices<std::variant_size_v<T>>(
        [](auto... i) { return (encodable_impl<std::variant_alternative_t<i, T>>() && ...); });
  } else if constexpr (k == kind::tuple) {
    // Tuple elements may be references, so std::tie(a, b) encodes like a tuple of values.
    return with_indices<std::tuple_size_v<T>>([](auto... i) {
      return (encodable_impl<std::remove_reference_t<std::tuple_element_t<i, T>>>() && ...);
    });
  } else if constexpr (k == kind::aggregate) {
    return with_indices<boost::pfr::tuple_size_v<T>>(
        [](auto... i) { return (encodable_impl<boost::pfr::tuple_element_t<i, T>>() && ...); });
  } else {
    return true;
  }
}

// Decoding writes into every part of a value in place, so nothing may be const, and elements
// that the decoder creates (container elements, optional values, variant alternatives) must be
// default-constructible.
template <class T>
consteval bool decodable_impl();

template <class T>
consteval bool decodable_element() {
  return std::default_initializable<T> && decodable_impl<T>();
}

template <class T>
consteval bool decodable_impl() {
  constexpr kind k = kind_v<T>;
  if constexpr (std::is_const_v<T> || k == kind::unsupported || k == kind::span) {
    return false;
  } else if constexpr (k == kind::vector || k == kind::set || k == kind::optional) {
    return decodable_element<typename T::value_type>();
  } else if constexpr (k == kind::array) {
    return decodable_impl<typename T::value_type>();
  } else if constexpr (k == kind::map) {
    return decodable_element<typename T::key_type>() &&
           decodable_element<typename T::mapped_type>();
  } else if constexpr (k == kind::variant) {
    return with_indices<std::variant_size_v<T>>(
        [](auto... i) { return (decodable_element<std::variant_alternative_t<i, T>>() && ...); });
  } else if constexpr (k == kind::tuple) {
    return with_indices<std::tuple_size_v<T>>([](auto... i) {
      return (decodable_impl<std::remove_reference_t<std::tuple_element_t<i, T>>>() && ...);
    });
  } else if constexpr (k == kind::aggregate) {
    return with_indices<boost::pfr::tuple_size_v<T>>(
        [](auto... i) { return (decodable_impl<boost::pfr::tuple_element_t<i, T>>() && ...); });
  } else {
    return true;
  }
}

template <class T>
struct owning {
  using type = T;
};
template <>
struct owning<std::string_view> {
  using type = std::string;
};
template <class U>
struct owning<std::span<const U>> {
  using type = std::vector<U>;
};

}  // namespace detail

// True when encode() accepts T (cv/ref ignored): T and everything it contains is supported.
template <class T>
concept encodable = detail::encodable_impl<std::remove_cvref_t<T>>();

// True when decode_from() accepts T& (T itself must not be const).
template <class T>
concept decodable = !std::is_reference_v<T> && detail::decodable_impl<T>();

// A type with the same wire format that owns its bytes: string_view -> std::string,
// span<const U> -> std::vector<U>, anything else -> itself (after remove_cvref).
template <class T>
using owning_t = typename detail::owning<std::remove_cvref_t<T>>::type;

}  // namespace corvid::codec
