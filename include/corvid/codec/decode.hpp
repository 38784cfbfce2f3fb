#pragma once
// decode_from() / decode(): rebuild a value from untrusted bytes. Every read goes through the
// bounds-checked reader, every count is checked against the bytes that remain before anything
// is sized from it, and every malformed input yields a decode_errc; only std::bad_alloc (or an
// exception from a user type's hash/compare) can escape. Nesting depth is bounded by the type,
// not the data, so hostile input cannot exhaust the stack.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include <boost/pfr.hpp>

#include "corvid/codec/bulk.hpp"
#include "corvid/codec/concepts.hpp"
#include "corvid/codec/errc.hpp"
#include "corvid/codec/reader.hpp"
#include "corvid/codec/size.hpp"
#include "corvid/codec/traits.hpp"

namespace corvid::codec {
namespace detail {

template <class T>
decode_errc decode_value(reader& r, T& out);

// A length-prefixed run of bytes, as a view into the input.
inline decode_errc read_sized_bytes(reader& r, std::string_view& out) {
  std::uint32_t n = 0;
  if (auto ec = r.read_count(1, n); ec != decode_errc::ok) return ec;
  return r.read_bytes(n, out);
}

// Decodes a counted sequence into a vector, reusing elements already there.
template <class Vector>
decode_errc decode_vector(reader& r, Vector& out) {
  using E = typename Vector::value_type;
  std::uint32_t n = 0;
  if (auto ec = r.read_count(min_encoded_size_v<E>, n); ec != decode_errc::ok) return ec;
  if constexpr (is_bulk_v<E>) {
    std::string_view bytes;
    if (auto ec = r.read_bytes(std::size_t{n} * sizeof(E), bytes); ec != decode_errc::ok) {
      return ec;
    }
    out.resize(n);
    if (n != 0) std::memcpy(out.data(), bytes.data(), bytes.size());
  } else if constexpr (std::is_same_v<E, bool>) {
    std::string_view bytes;
    if (auto ec = r.read_bytes(n, bytes); ec != decode_errc::ok) return ec;
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto b = static_cast<std::uint8_t>(bytes[i]);
      if (b > 1) return decode_errc::invalid_value;
      out[i] = b == 1;
    }
  } else {
    out.resize(n);  // n fits in the input (read_count), so this allocation is bounded by it
    for (auto& e : out) {
      if (auto ec = decode_value(r, e); ec != decode_errc::ok) return ec;
    }
  }
  return decode_errc::ok;
}

// Decodes a counted sequence of keys (set) or key/value pairs (map). A repeated key is
// invalid_value: silently dropping an entry would hide a sender bug or an attack.
template <class Assoc>
decode_errc decode_assoc(reader& r, Assoc& out) {
  using K = typename Assoc::key_type;
  constexpr bool is_map_v = kind_v<Assoc> == kind::map;
  std::size_t min_entry = min_encoded_size_v<K>;
  if constexpr (is_map_v) min_entry += min_encoded_size_v<typename Assoc::mapped_type>;
  std::uint32_t n = 0;
  if (auto ec = r.read_count(min_entry, n); ec != decode_errc::ok) return ec;
  out.clear();
  if constexpr (requires { out.reserve(n); }) out.reserve(n);  // unordered: n is checked above
  for (std::uint32_t i = 0; i < n; ++i) {
    K key{};
    if (auto ec = decode_value(r, key); ec != decode_errc::ok) return ec;
    const std::size_t before = out.size();
    // Hinting at end() makes sorted input (what encode writes for std::map/set) O(1) per entry.
    if constexpr (is_map_v) {
      auto it = out.try_emplace(out.end(), std::move(key));
      if (out.size() == before) return decode_errc::invalid_value;
      if (auto ec = decode_value(r, it->second); ec != decode_errc::ok) return ec;
    } else {
      out.emplace_hint(out.end(), std::move(key));
      if (out.size() == before) return decode_errc::invalid_value;
    }
  }
  return decode_errc::ok;
}

template <class Variant>
decode_errc decode_variant(reader& r, Variant& out) {
  std::uint32_t index = 0;
  if (auto ec = r.read_varint(index); ec != decode_errc::ok) return ec;
  if (index >= std::variant_size_v<Variant>) return decode_errc::invalid_value;
  decode_errc ec = decode_errc::ok;
  visit_index<std::variant_size_v<Variant>>(index, [&](auto i) {
    if (out.index() != i) out.template emplace<i>();  // else reuse the current alternative
    ec = decode_value(r, std::get<i>(out));
  });
  return ec;
}

// Tuple elements / aggregate fields in order; after the first error the rest are skipped.
template <class T>
decode_errc decode_members(reader& r, T& out) {
  decode_errc ec = decode_errc::ok;
  for_each_member(out, [&](auto& member) {
    if (ec == decode_errc::ok) ec = decode_value(r, member);
  });
  return ec;
}

template <class T>
decode_errc decode_value(reader& r, T& out) {
  constexpr kind k = kind_v<T>;
  if constexpr (k == kind::boolean) {
    std::uint8_t b = 0;
    if (auto ec = r.read_byte(b); ec != decode_errc::ok) return ec;
    if (b > 1) return decode_errc::invalid_value;
    out = static_cast<T>(b == 1);
    return decode_errc::ok;
  } else if constexpr (is_bulk_v<T>) {
    return r.read_raw(out);  // every byte pattern is a valid T
  } else if constexpr (k == kind::string || k == kind::string_view || k == kind::byte_span) {
    std::string_view bytes;
    if (auto ec = read_sized_bytes(r, bytes); ec != decode_errc::ok) return ec;
    if constexpr (k == kind::string) {
      out.assign(bytes.data(), bytes.size());
    } else if constexpr (k == kind::string_view) {
      out = bytes;  // zero-copy: points into the input
    } else {
      using E = typename T::element_type;  // const char / const unsigned char / const std::byte
      out = T(reinterpret_cast<E*>(bytes.data()), bytes.size());  // zero-copy
    }
    return decode_errc::ok;
  } else if constexpr (k == kind::vector || k == kind::bool_vector) {
    return decode_vector(r, out);
  } else if constexpr (k == kind::array) {
    for (auto& e : out) {
      if (auto ec = decode_value(r, e); ec != decode_errc::ok) return ec;
    }
    return decode_errc::ok;
  } else if constexpr (k == kind::map || k == kind::set) {
    return decode_assoc(r, out);
  } else if constexpr (k == kind::optional) {
    std::uint8_t tag = 0;
    if (auto ec = r.read_byte(tag); ec != decode_errc::ok) return ec;
    if (tag == 0) {
      out.reset();
      return decode_errc::ok;
    }
    if (tag != 1) return decode_errc::invalid_value;
    if (!out.has_value()) out.emplace();
    return decode_value(r, *out);
  } else if constexpr (k == kind::variant) {
    return decode_variant(r, out);
  } else if constexpr (k == kind::empty) {
    return decode_errc::ok;
  } else if constexpr (k == kind::tuple || k == kind::aggregate) {
    return decode_members(r, out);
  } else {
    static_assert(always_false<T>, "corvid::codec: unsupported type (see docs/codec.md)");
  }
}

}  // namespace detail

// Decodes one value from the front of r into out, leaving r after it. On error, out and the
// position of r are unspecified (but valid). A string_view or byte span inside out points into
// the bytes r reads, which the caller must keep alive.
template <class T>
decode_errc decode_from(reader& r, T& out) {
  static_assert(detail::kind_v<T> != detail::kind::span,
                "corvid::codec: std::span<const T> is encode-only unless T is a byte type; decode "
                "into std::vector<T> (codec::owning_t) instead");
  static_assert(decodable<T>,
                "corvid::codec::decode_from: T is not decodable (an unsupported, const or "
                "non-default-constructible type inside; see docs/codec.md)");
  if constexpr (decodable<T>) {
    return detail::decode_value(r, out);
  } else {
    return decode_errc::invalid_value;
  }
}

// Decodes exactly one value that must span all of bytes (else trailing_bytes).
template <class T>
decode_errc decode(std::string_view bytes, T& out) {
  reader r(bytes);
  const decode_errc ec = decode_from(r, out);
  if (ec == decode_errc::ok && !r.empty()) return decode_errc::trailing_bytes;
  return ec;
}

}  // namespace corvid::codec
