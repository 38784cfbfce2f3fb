#pragma once
// Bulk types: those whose in-memory bytes ARE their wire bytes, so arrays and vectors of them
// are copied with one memcpy each way. That holds for the scalar kind (little-endian, fixed
// width, every bit pattern valid), and for std::array and frozen aggregates built only from bulk
// types with no padding. bool is excluded: bytes other than 0/1 must be rejected, not copied, and
// so are closed enums, whose values are checked against their enumerators. An evolvable
// aggregate is not bulk (its byte length comes first), but when its fields are, the bytes after
// that length are its memory bytes: bulk_body_v, one memcpy for all the fields.
#include <cstddef>
#include <type_traits>

#include <boost/pfr.hpp>

#include "corvid/codec/enum_values.hpp"
#include "corvid/codec/traits.hpp"

namespace corvid::codec::detail {

template <class T>
consteval bool bulk_body_impl();

template <class T>
consteval bool bulk_impl() {
  constexpr kind k = kind_v<T>;
  if constexpr (std::is_reference_v<T> || std::is_volatile_v<T>) {
    return false;
  } else if constexpr (k == kind::scalar) {
    return !closed_enum<T>;
  } else if constexpr (k == kind::array) {
    using E = typename T::value_type;
    return bulk_impl<E>() && sizeof(T) == std::tuple_size_v<T> * sizeof(E);
  } else if constexpr (k == kind::aggregate) {
    return enable_frozen_layout<T> && bulk_body_impl<T>();
  } else {
    return false;
  }
}

template <class T>
consteval bool bulk_body_impl() {
  if constexpr (kind_v<T> != kind::aggregate) {
    return false;
  } else {
    // Fields of an aggregate share one access level, so they are laid out in declaration
    // order; if their sizes add up to sizeof(T) there is no padding between or after them.
    // Boost.PFR reports a reference member as its referred-to type, so `struct { int64_t& r; }`
    // would pass the size check while holding a pointer: a deleted copy assignment (reference
    // or const member) rules such structs out.
    if constexpr (!std::is_trivially_copyable_v<T> || !std::is_trivially_copy_assignable_v<T>) {
      return false;
    } else {
      return with_indices<boost::pfr::tuple_size_v<T>>([](auto... i) {
        return (bulk_impl<boost::pfr::tuple_element_t<i, T>>() && ...) &&
               (sizeof(boost::pfr::tuple_element_t<i, T>) + ... + 0) == sizeof(T);
      });
    }
  }
}

template <class T>
inline constexpr bool is_bulk_v = bulk_impl<std::remove_cv_t<T>>();
template <class T>
inline constexpr bool bulk_body_v = bulk_body_impl<std::remove_cv_t<T>>();

}  // namespace corvid::codec::detail
