#pragma once
// Encoded sizes. encoded_size(v) is the exact byte count encode(v) appends. min_encoded_size_v
// is what the decoder uses to reject element counts that cannot fit in the remaining input;
// fixed_encoded_size_v lets containers of fixed-size elements be sized without a loop.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <tuple>
#include <type_traits>
#include <variant>

#include <boost/pfr.hpp>

#include "corvid/codec/bulk.hpp"
#include "corvid/codec/concepts.hpp"
#include "corvid/codec/traits.hpp"
#include "corvid/codec/varint.hpp"

namespace corvid::codec {
namespace detail {

template <class T>
consteval std::size_t min_size();

// The smallest encoding of an aggregate's fields, without any length prefix.
template <class T>
consteval std::size_t fields_min_size() {
  return with_indices<boost::pfr::tuple_size_v<T>>(
      [](auto... i) { return (min_size<boost::pfr::tuple_element_t<i, T>>() + ... + 0); });
}

template <class T>
consteval std::size_t min_size() {
  constexpr kind k = kind_v<T>;
  if constexpr (k == kind::boolean) {
    return 1;
  } else if constexpr (k == kind::scalar) {
    return sizeof(T);
  } else if constexpr (k == kind::array) {
    return std::tuple_size_v<T> * min_size<typename T::value_type>();
  } else if constexpr (k == kind::empty) {
    return 0;
  } else if constexpr (k == kind::tuple) {
    return with_indices<std::tuple_size_v<T>>([](auto... i) {
      return (min_size<std::remove_reference_t<std::tuple_element_t<i, T>>>() + ... + 0);
    });
  } else if constexpr (k == kind::aggregate) {
    // An evolvable struct from an older peer may stop after any field: only its length is sure.
    return is_evolvable_v<T> ? 1 : fields_min_size<T>();
  } else {
    return 1;  // everything else starts with a tag, index, length or count byte
  }
}

inline constexpr std::size_t not_fixed = std::numeric_limits<std::size_t>::max();

template <class T>
consteval std::size_t fixed_size();

// The encoded size of an aggregate's fields, without any length prefix, when each has a fixed
// size. Not fields_min_size: a nested evolvable struct's minimum is its length byte alone.
template <class T>
consteval std::size_t fields_fixed_size() {
  return with_indices<boost::pfr::tuple_size_v<T>>(
      [](auto... i) { return (fixed_size<boost::pfr::tuple_element_t<i, T>>() + ... + 0); });
}

// The encoded size shared by every value of T, or not_fixed.
template <class T>
consteval std::size_t fixed_size() {
  constexpr kind k = kind_v<T>;
  if constexpr (k == kind::boolean || k == kind::scalar || k == kind::empty) {
    return min_size<T>();
  } else if constexpr (k == kind::array) {
    constexpr std::size_t e = fixed_size<typename T::value_type>();
    return e == not_fixed ? not_fixed : e * std::tuple_size_v<T>;
  } else if constexpr (k == kind::tuple || k == kind::aggregate) {
    constexpr bool all_fixed = [] {
      if constexpr (k == kind::tuple) {
        return with_indices<std::tuple_size_v<T>>([](auto... i) {
          return (
              (fixed_size<std::remove_reference_t<std::tuple_element_t<i, T>>>() != not_fixed) &&
              ...);
        });
      } else {
        return with_indices<boost::pfr::tuple_size_v<T>>([](auto... i) {
          return ((fixed_size<boost::pfr::tuple_element_t<i, T>>() != not_fixed) && ...);
        });
      }
    }();
    if constexpr (!all_fixed) {
      return not_fixed;
    } else if constexpr (k == kind::tuple) {
      return with_indices<std::tuple_size_v<T>>([](auto... i) {
        return (fixed_size<std::remove_reference_t<std::tuple_element_t<i, T>>>() + ... + 0);
      });
    } else if constexpr (is_evolvable_v<T>) {
      constexpr std::size_t body = fields_fixed_size<T>();
      return varint_size(static_cast<std::uint32_t>(body)) + body;
    } else {
      return fields_fixed_size<T>();
    }
  } else {
    return not_fixed;
  }
}

template <class T>
inline constexpr std::size_t min_encoded_size_v = min_size<std::remove_cv_t<T>>();
template <class T>
inline constexpr std::size_t fixed_encoded_size_v = fixed_size<std::remove_cv_t<T>>();

template <class T>
std::size_t size_of(const T& v);

// Size of `n` elements from an iterable range, without the count prefix.
template <class E, class Range>
std::size_t elements_size(const Range& r, std::size_t n) {
  if constexpr (fixed_encoded_size_v<E> != not_fixed) {
    return n * fixed_encoded_size_v<E>;
  } else {
    std::size_t total = 0;
    for (const auto& e : r) total += size_of(e);
    return total;
  }
}

// The fields of a tuple or aggregate, without the length prefix of an evolvable one.
template <class T>
std::size_t fields_size(const T& v) {
  if constexpr (kind_v<T> == kind::aggregate && fixed_encoded_size_v<T> != not_fixed) {
    return fields_fixed_size<T>();
  } else {
    std::size_t total = 0;
    for_each_member(v, [&](const auto& e) { total += size_of(e); });
    return total;
  }
}

template <class T>
std::size_t size_of(const T& v) {
  constexpr kind k = kind_v<T>;
  if constexpr (fixed_encoded_size_v<T> != not_fixed) {
    return fixed_encoded_size_v<T>;
  } else if constexpr (k == kind::string || k == kind::string_view || k == kind::byte_span) {
    return varint_size(length_prefix(v.size())) + v.size();
  } else if constexpr (k == kind::span || k == kind::vector || k == kind::set) {
    return varint_size(length_prefix(v.size())) +
           elements_size<typename T::value_type>(v, v.size());
  } else if constexpr (k == kind::bool_vector) {
    return varint_size(length_prefix(v.size())) + v.size();
  } else if constexpr (k == kind::array) {
    return elements_size<typename T::value_type>(v, v.size());
  } else if constexpr (k == kind::map) {
    std::size_t total = varint_size(length_prefix(v.size()));
    for (const auto& [key, value] : v) total += size_of(key) + size_of(value);
    return total;
  } else if constexpr (k == kind::optional) {
    return 1 + (v.has_value() ? size_of(*v) : 0);
  } else if constexpr (k == kind::variant) {
    if (v.valueless_by_exception()) throw std::bad_variant_access();
    std::size_t total = varint_size(static_cast<std::uint32_t>(v.index()));
    visit_index<std::variant_size_v<T>>(v.index(),
                                        [&](auto i) { total += size_of(std::get<i>(v)); });
    return total;
  } else if constexpr (is_evolvable_v<T>) {
    const std::size_t body = fields_size(v);
    return varint_size(length_prefix(body)) + body;
  } else if constexpr (k == kind::tuple || k == kind::aggregate) {
    return fields_size(v);
  } else {
    static_assert(always_false<T>, "corvid::codec: unsupported type (see docs/codec.md)");
  }
}

}  // namespace detail

// The exact number of bytes encode(out, value) appends. Throws std::length_error where encode
// would (a string or container longer than UINT32_MAX).
template <class T>
std::size_t encoded_size(const T& value) {
  static_assert(encodable<T>,
                "corvid::codec::encoded_size: T is not encodable (unsupported type inside; "
                "see docs/codec.md for the supported types)");
  if constexpr (encodable<T>) {
    return detail::size_of(value);
  } else {
    return 0;
  }
}

}  // namespace corvid::codec
