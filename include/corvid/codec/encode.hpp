#pragma once
// encode(): appends the wire form of a value to a sink. Each leaf asks the sink for its bytes
// once (a string is one extend for varint + bytes, a vector of bulk elements one memcpy), with
// no virtual calls and no temporary buffers.
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <variant>

#include <boost/pfr.hpp>

#include "corvid/codec/bulk.hpp"
#include "corvid/codec/concepts.hpp"
#include "corvid/codec/sink.hpp"
#include "corvid/codec/size.hpp"
#include "corvid/codec/traits.hpp"
#include "corvid/codec/varint.hpp"

namespace corvid::codec {
namespace detail {

template <class Sink, class T>
void encode_value(Sink& out, const T& v);

// n (>= 1) writable bytes at the end of out. A sink reports failure by throwing, so a null
// here means a broken sink; checking also tells GCC's -Wnull-dereference the pointer is valid.
template <class Sink>
char* append_space(Sink& out, std::size_t n) {
  char* p = out.extend(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

// Writes into room already taken from a sink, whose size is exact: an evolvable struct takes
// its length and all its fields in one extend, and its fields then only bump this pointer.
struct reserved_sink {
  char* pos;
  char* extend(std::size_t n) noexcept {
    char* p = pos;
    pos += n;
    return p;
  }
};

template <class Sink>
void encode_varint(Sink& out, std::uint32_t n) {
  write_varint(append_space(out, varint_size(n)), n);
}

// Count prefix + n bulk elements starting at data: a single extend and memcpy.
template <class Sink, class E>
void encode_bulk(Sink& out, const E* data, std::size_t n) {
  const std::uint32_t len = length_prefix(n);
  const std::size_t bytes = n * sizeof(E);
  char* p = write_varint(append_space(out, varint_size(len) + bytes), len);
  if (bytes != 0) std::memcpy(p, data, bytes);  // data may be null when n == 0
}

// Count prefix + each element in order (for containers whose elements are not bulk, or that
// are not contiguous).
template <class Sink, class Range>
void encode_counted(Sink& out, const Range& r) {
  encode_varint(out, length_prefix(r.size()));
  for (const auto& e : r) encode_value(out, e);
}

template <class Sink, class T>
void encode_value(Sink& out, const T& v) {
  constexpr kind k = kind_v<T>;
  if constexpr (k == kind::boolean) {
    *append_space(out, 1) = static_cast<bool>(v) ? 1 : 0;
  } else if constexpr (is_bulk_v<T> || k == kind::scalar) {
    // scalars (closed enums too: checked on decode only), and arrays/frozen aggregates of bulk
    // types without padding: memory bytes == wire bytes
    std::memcpy(append_space(out, sizeof(T)), &v, sizeof(T));
  } else if constexpr (k == kind::string || k == kind::string_view || k == kind::byte_span) {
    encode_bulk(out, v.data(), v.size());
  } else if constexpr (k == kind::span || k == kind::vector) {
    if constexpr (is_bulk_v<typename T::value_type>) {
      encode_bulk(out, v.data(), v.size());
    } else {
      encode_counted(out, v);
    }
  } else if constexpr (k == kind::set) {
    encode_counted(out, v);
  } else if constexpr (k == kind::array) {
    for (const auto& e : v) encode_value(out, e);  // length implied by the type
  } else if constexpr (k == kind::bool_vector) {
    const std::uint32_t len = length_prefix(v.size());
    char* p = write_varint(append_space(out, varint_size(len) + v.size()), len);
    for (const bool b : v) *p++ = b ? 1 : 0;
  } else if constexpr (k == kind::map) {
    encode_varint(out, length_prefix(v.size()));
    for (const auto& [key, value] : v) {
      encode_value(out, key);
      encode_value(out, value);
    }
  } else if constexpr (k == kind::optional) {
    *append_space(out, 1) = v.has_value() ? 1 : 0;
    if (v.has_value()) encode_value(out, *v);
  } else if constexpr (k == kind::variant) {
    if (v.valueless_by_exception()) throw std::bad_variant_access();
    encode_varint(out, static_cast<std::uint32_t>(v.index()));
    visit_index<std::variant_size_v<T>>(v.index(),
                                        [&](auto i) { encode_value(out, std::get<i>(v)); });
  } else if constexpr (k == kind::empty) {
    // std::monostate: nothing on the wire
  } else if constexpr (is_evolvable_v<T>) {
    // The byte length first, so a reader can skip fields it does not know. Sizing the fields
    // is free when their size is fixed, and one pass over the lengths of the others; knowing
    // it, the sink is asked for room once, for the length and every field together.
    const std::uint32_t body = length_prefix(fields_size(v));
    char* p = write_varint(append_space(out, varint_size(body) + body), body);
    if constexpr (bulk_body_v<T>) {
      std::memcpy(p, &v, sizeof(T));
    } else {
      reserved_sink fields{p};
      for_each_member(v, [&](const auto& e) { encode_value(fields, e); });
      // encoded_size is exact (tests and the codec fuzzer check it), so this holds.
      assert(fields.pos == p + body);
    }
  } else if constexpr (k == kind::tuple || k == kind::aggregate) {
    for_each_member(v, [&](const auto& e) { encode_value(out, e); });
  } else {
    static_assert(always_false<T>, "corvid::codec: unsupported type (see docs/codec.md)");
  }
}

}  // namespace detail

// Appends the encoding of value to out (any type with `char* extend(std::size_t)`).
// Throws std::length_error if a string or container holds more than UINT32_MAX elements, and
// std::bad_variant_access for a valueless variant; never for any other value.
template <sink Sink, class T>
void encode(Sink& out, const T& value) {
  static_assert(encodable<T>,
                "corvid::codec::encode: T is not encodable (unsupported type inside; see "
                "docs/codec.md for the supported types)");
  if constexpr (encodable<T>) detail::encode_value(out, value);  // one error, not a cascade
}

// Encodes each value in turn: the same bytes as encode(out, std::tuple<Ts...>{values...}).
template <sink Sink, class... Ts>
void encode_all(Sink& out, const Ts&... values) {
  static_assert((encodable<Ts> && ...),
                "corvid::codec::encode_all: an argument type is not encodable (see "
                "docs/codec.md for the supported types)");
  if constexpr ((encodable<Ts> && ...)) (detail::encode_value(out, values), ...);
}

}  // namespace corvid::codec
