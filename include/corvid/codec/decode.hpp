#pragma once
// decode_from() / decode(): rebuild a value from untrusted bytes. Every read goes through the
// bounds-checked reader, every count is checked against the bytes that remain before anything
// is sized from it, and every malformed input yields a decode_errc; only std::bad_alloc (or an
// exception from a user type's hash/compare) can escape. Nesting depth is bounded by the type,
// not the data, so hostile input cannot exhaust the stack.
//
// The overloads taking a decode_budget also charge every allocation to it before making it
// (docs/codec.md, "Decode budget"). Both kinds share one set of templates, parameterised on the
// reader type R: the plain reader for the plain overloads, a budget_reader (a reader that also
// carries the budget) for the others.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include <boost/pfr.hpp>

#include "corvid/codec/bulk.hpp"
#include "corvid/codec/concepts.hpp"
#include "corvid/codec/decode_budget.hpp"
#include "corvid/codec/enum_values.hpp"
#include "corvid/codec/errc.hpp"
#include "corvid/codec/reader.hpp"
#include "corvid/codec/size.hpp"
#include "corvid/codec/traits.hpp"

namespace corvid::codec {
namespace detail {

// The reader of the budgeted decode()/decode_from(). The budget rides in the reader rather than
// in an extra argument so that the plain decoders keep their exact signatures: every charging
// branch is under `if constexpr (charges_v<R>)`, and with R = reader they compile to the decoder
// they were before budgets existed (same machine code, checked with GCC 12 -O2).
class budget_reader : public reader {
 public:
  budget_reader(const reader& r, decode_budget& budget) noexcept : reader(r), budget_(&budget) {}
  decode_budget& budget() const noexcept { return *budget_; }

 private:
  decode_budget* budget_;
};

template <class R>
inline constexpr bool charges_v = std::is_same_v<R, budget_reader>;

// Charges n elements of size bytes each. A product past SIZE_MAX cannot fit in any budget, so it
// fails without wrapping around to a small charge.
inline bool take_n(decode_budget& budget, std::size_t n, std::size_t size) noexcept {
  if (size != 0 && n > std::numeric_limits<std::size_t>::max() / size) return false;
  return budget.take(n * size);
}

constexpr std::size_t round_up(std::size_t n, std::size_t to) noexcept {
  return (n + to - 1) / to * to;
}

// The heap block a std::string of n > capacity() chars needs when it is built at its size (which
// is how the charging decoder grows one, so that no growth policy applies): n + 1 for the
// terminator, rounded up to 16 because libc++ rounds string blocks up to 16 bytes (8 in newer
// releases; libstdc++ allocates exactly n + 1, so the over-count is below 16 bytes a string).
constexpr std::size_t string_heap_bytes(std::size_t n) noexcept { return round_up(n + 1, 16); }

// One node of a std::map/set/unordered_*: the value plus 4 pointers of links, colour or cached
// hash (libstdc++ and libc++ tree nodes use 3 pointers and a colour word, hash nodes 1 pointer
// and a cached hash), the links padded to the value's alignment and the total to the node's.
template <class Value>
constexpr std::size_t node_bytes() noexcept {
  constexpr std::size_t align = alignof(Value) > alignof(void*) ? alignof(Value) : alignof(void*);
  return round_up(round_up(4 * sizeof(void*), alignof(Value)) + sizeof(Value), align);
}

// The bucket array unordered_*::reserve(n) may allocate: for the needed count m = n / max load
// factor, the implementation picks the next prime (libstdc++: a table with steps under 10 %;
// libc++: next prime, or next power of two when the count is already one), so 2m + 16 pointers
// bounds it. Charged whenever the container is decoded (even empty), because libstdc++'s
// reserve reallocates whenever the bucket count it picks differs from the current one, even to
// shrink it, and a default-constructed table has a single inline bucket.
template <class Unordered>
std::size_t bucket_bytes(const Unordered& c, std::size_t n) noexcept {
  const double wanted = static_cast<double>(n) / static_cast<double>(c.max_load_factor());
  // A max_load_factor a caller set absurdly low could make this overflow; such a table cannot fit.
  if (!(wanted < 1e18)) return std::numeric_limits<std::size_t>::max();
  const auto m = static_cast<std::size_t>(wanted) + 1;
  return (2 * m + 16) * sizeof(void*);
}

template <class T, class R>
decode_errc decode_value(R& r, T& out);

// A length-prefixed run of bytes, as a view into the input.
inline decode_errc read_sized_bytes(reader& r, std::string_view& out) {
  std::uint32_t n = 0;
  if (auto ec = r.read_count(1, n); ec != decode_errc::ok) return ec;
  return r.read_bytes(n, out);
}

// Charging only: makes room for n elements in out, charging the new block first when it needs
// one. reserve(n) allocates exactly n elements; resize() past capacity() would instead grow by
// the implementation's policy (up to twice the old size), more than was charged. Elements
// already there are moved into the new block, keeping their own heap buffers for reuse.
template <class Vector>
bool make_room(Vector& out, std::size_t n, decode_budget& budget) {
  if (n <= out.capacity()) return true;  // resize() will construct in place: no allocation
  using E = typename Vector::value_type;
  if constexpr (std::is_same_v<E, bool>) {
    // Packed bits, allocated in whole words (unsigned long in libstdc++, size_t in libc++).
    constexpr std::size_t word = sizeof(std::size_t);
    if (!budget.take((n + 8 * word - 1) / (8 * word) * word)) return false;
  } else {
    if (!take_n(budget, n, sizeof(E))) return false;
    // reserve() copies elements that may throw while moving, and a copy allocates uncharged;
    // they are about to be overwritten anyway.
    if constexpr (!std::is_nothrow_move_constructible_v<E>) out.clear();
  }
  out.reserve(n);
  return true;
}

// Decodes a counted sequence into a vector, reusing elements already there. Charging assumes
// that default-constructing an element allocates nothing, true of every type the codec supports
// except user aggregates whose default member initializers allocate (docs/codec.md).
template <class Vector, class R>
decode_errc decode_vector(R& r, Vector& out) {
  using E = typename Vector::value_type;
  std::uint32_t n = 0;
  if (auto ec = r.read_count(min_encoded_size_v<E>, n); ec != decode_errc::ok) return ec;
  if constexpr (is_bulk_v<E>) {
    std::string_view bytes;
    if (auto ec = r.read_bytes(std::size_t{n} * sizeof(E), bytes); ec != decode_errc::ok) {
      return ec;
    }
    if constexpr (charges_v<R>) {
      if (!make_room(out, n, r.budget())) return decode_errc::over_budget;
    }
    out.resize(n);
    if (n != 0) std::memcpy(out.data(), bytes.data(), bytes.size());
  } else if constexpr (std::is_same_v<E, bool>) {
    std::string_view bytes;
    if (auto ec = r.read_bytes(n, bytes); ec != decode_errc::ok) return ec;
    if constexpr (charges_v<R>) {
      if (!make_room(out, n, r.budget())) return decode_errc::over_budget;
    }
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto b = static_cast<std::uint8_t>(bytes[i]);
      if (b > 1) return decode_errc::invalid_value;
      out[i] = b == 1;
    }
  } else {
    // n fits in the input (read_count), so without a budget this allocation is bounded by the
    // input size times sizeof(E) / min_encoded_size_v<E>; with one, it is charged first.
    if constexpr (charges_v<R>) {
      if (!make_room(out, n, r.budget())) return decode_errc::over_budget;
    }
    out.resize(n);
    for (auto& e : out) {
      if (auto ec = decode_value(r, e); ec != decode_errc::ok) return ec;
    }
  }
  return decode_errc::ok;
}

// Decodes a counted sequence of keys (set) or key/value pairs (map). A repeated key is
// invalid_value: silently dropping an entry would hide a sender bug or an attack.
template <class Assoc, class R>
decode_errc decode_assoc(R& r, Assoc& out) {
  using K = typename Assoc::key_type;
  constexpr bool is_map_v = kind_v<Assoc> == kind::map;
  std::size_t min_entry = min_encoded_size_v<K>;
  if constexpr (is_map_v) min_entry += min_encoded_size_v<typename Assoc::mapped_type>;
  std::uint32_t n = 0;
  if (auto ec = r.read_count(min_entry, n); ec != decode_errc::ok) return ec;
  if constexpr (charges_v<R>) {
    // Every entry is a new node (clear() frees the old ones). Charged for all n at once, so a
    // count that cannot fit fails before any work; a failure part-way over-counts, never under.
    if (!take_n(r.budget(), n, node_bytes<typename Assoc::value_type>())) {
      return decode_errc::over_budget;
    }
    if constexpr (requires { out.reserve(n); }) {
      if (!r.budget().take(bucket_bytes(out, n))) return decode_errc::over_budget;
    }
  }
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

template <class Variant, class R>
decode_errc decode_variant(R& r, Variant& out) {
  std::uint32_t index = 0;
  if (auto ec = r.read_varint(index); ec != decode_errc::ok) return ec;
  // An alternative a newer peer appended, or corrupt input: either way not a value of Variant.
  if (index >= std::variant_size_v<Variant>) return decode_errc::unknown_alternative;
  decode_errc ec = decode_errc::ok;
  visit_index<std::variant_size_v<Variant>>(index, [&](auto i) {
    if (out.index() != i) out.template emplace<i>();  // else reuse the current alternative
    ec = decode_value(r, std::get<i>(out));
  });
  return ec;
}

// Tuple elements / aggregate fields in order; after the first error the rest are skipped.
template <class T, class R>
decode_errc decode_members(R& r, T& out) {
  decode_errc ec = decode_errc::ok;
  for_each_member(out, [&](auto& member) {
    if (ec == decode_errc::ok) ec = decode_value(r, member);
  });
  return ec;
}

// A reader over bytes that r has already taken, charging r's budget if it has one.
template <class R>
R sub_reader(const R& r, std::string_view bytes) noexcept {
  if constexpr (charges_v<R>) {
    return R(reader(bytes), r.budget());
  } else {
    static_cast<void>(r);
    return R(bytes);
  }
}

// Gives the fields of out from index `first` on their default values: the trailing fields an
// older peer's struct did not have. The defaults come from a value-initialised T, so default
// member initialisers apply (like element default construction, assumed not to allocate).
template <class T>
decode_errc default_fields_from(T& out, std::size_t first) {
  if constexpr (std::default_initializable<T> && std::is_move_assignable_v<T>) {
    T fresh{};
    with_indices<boost::pfr::tuple_size_v<T>>([&](auto... i) {
      static_cast<void>(
          ((i >= first ? (boost::pfr::get<i>(out) = std::move(boost::pfr::get<i>(fresh)), 0) : 0),
           ...));
    });
    return decode_errc::ok;
  } else {
    static_cast<void>(out);
    static_cast<void>(first);
    return decode_errc::truncated;  // no default to give (a reference or const member)
  }
}

// An evolvable aggregate: a byte length, then the fields. Fields past the end of those bytes
// keep (get) their defaults; bytes left after the last known field are skipped. A field cut in
// the middle by the length is truncated, not defaulted.
template <class T, class R>
decode_errc decode_evolvable(R& r, T& out) {
  std::uint32_t n = 0;
  if (auto ec = r.read_varint(n); ec != decode_errc::ok) return ec;
  std::string_view body;
  if (auto ec = r.read_bytes(n, body); ec != decode_errc::ok) return ec;
  if constexpr (bulk_body_v<T>) {
    if (body.size() >= sizeof(T)) [[likely]] {  // every field present: memory bytes == wire bytes
      std::memcpy(static_cast<void*>(&out), body.data(), sizeof(T));
      return decode_errc::ok;
    }
  }
  R sub = sub_reader(r, body);
  decode_errc ec = decode_errc::ok;
  std::size_t decoded = 0;
  for_each_member(out, [&](auto& member) {
    if (ec != decode_errc::ok || sub.empty()) return;
    ec = decode_value(sub, member);
    ++decoded;
  });
  if (ec != decode_errc::ok) return ec;
  if (decoded < boost::pfr::tuple_size_v<T>) [[unlikely]]
    return default_fields_from(out, decoded);
  return decode_errc::ok;
}

// Inline storage (optional, variant, array, tuple, aggregate) is charged as part of whatever
// holds it; only the heap blocks of strings, vectors and map/set nodes are charged here.
template <class T, class R>
decode_errc decode_value(R& r, T& out) {
  constexpr kind k = kind_v<T>;
  if constexpr (k == kind::boolean) {
    std::uint8_t b = 0;
    if (auto ec = r.read_byte(b); ec != decode_errc::ok) return ec;
    if (b > 1) return decode_errc::invalid_value;
    out = static_cast<T>(b == 1);
    return decode_errc::ok;
  } else if constexpr (is_bulk_v<T>) {
    return r.read_raw(out);  // every byte pattern is a valid T
  } else if constexpr (closed_enum<T>) {
    if (auto ec = r.read_raw(out); ec != decode_errc::ok) return ec;
    // A value only a newer peer's enum has (or corrupt input): refused, never passed on.
    return is_known_enum_value(out) ? decode_errc::ok : decode_errc::unknown_alternative;
  } else if constexpr (k == kind::string || k == kind::string_view || k == kind::byte_span) {
    std::string_view bytes;
    if (auto ec = read_sized_bytes(r, bytes); ec != decode_errc::ok) return ec;
    if constexpr (k == kind::string) {
      if constexpr (charges_v<R>) {
        if (bytes.size() > out.capacity()) {  // else it fits in place (SSO or reused capacity)
          if (!r.budget().take(string_heap_bytes(bytes.size()))) {
            return decode_errc::over_budget;
          }
          // Built at its size rather than assign()ed: assign() grows to max(n, 2 * capacity()).
          out = T(bytes.data(), bytes.size(), out.get_allocator());
          return decode_errc::ok;
        }
      }
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
  } else if constexpr (is_evolvable_v<T>) {
    return decode_evolvable(r, out);
  } else if constexpr (k == kind::tuple || k == kind::aggregate) {
    return decode_members(r, out);
  } else {
    static_assert(always_false<T>, "corvid::codec: unsupported type (see docs/codec.md)");
  }
}

// The checks decode_from() makes on T, with readable messages; true when T is decodable.
template <class T>
consteval bool check_decodable() {
  static_assert(kind_v<T> != kind::span,
                "corvid::codec: std::span<const T> is encode-only unless T is a byte type; decode "
                "into std::vector<T> (codec::owning_t) instead");
  static_assert(decodable<T>,
                "corvid::codec::decode_from: T is not decodable (an unsupported, const or "
                "non-default-constructible type inside; see docs/codec.md)");
  return decodable<T>;
}

// Whether decoding a T can allocate at all: false for scalars, views and fixed compositions
// of them (optional, variant, array, tuple, aggregates). Such a T needs no budget, so a
// caller may skip making one.
template <class T>
consteval bool may_allocate() {
  constexpr kind k = kind_v<T>;
  if constexpr (k == kind::boolean || k == kind::scalar || k == kind::string_view ||
                k == kind::byte_span || k == kind::empty) {
    return false;
  } else if constexpr (k == kind::array || k == kind::optional) {
    return may_allocate<typename T::value_type>();
  } else if constexpr (k == kind::variant) {
    return with_indices<std::variant_size_v<T>>(
        [](auto... i) { return (may_allocate<std::variant_alternative_t<i, T>>() || ...); });
  } else if constexpr (k == kind::tuple) {
    return with_indices<std::tuple_size_v<T>>([](auto... i) {
      return (may_allocate<std::remove_reference_t<std::tuple_element_t<i, T>>>() || ... || false);
    });
  } else if constexpr (k == kind::aggregate) {
    return with_indices<boost::pfr::tuple_size_v<T>>([](auto... i) {
      return (may_allocate<boost::pfr::tuple_element_t<i, T>>() || ... || false);
    });
  } else {
    return true;  // strings, containers
  }
}

}  // namespace detail

// False when decoding a T never allocates (see detail::may_allocate): a decode_budget would
// stay unused.
template <class T>
inline constexpr bool decoding_may_allocate_v = detail::may_allocate<T>();

// Decodes one value from the front of r into out, leaving r after it. On error, out and the
// position of r are unspecified (but valid). A string_view or byte span inside out points into
// the bytes r reads, which the caller must keep alive.
template <class T>
decode_errc decode_from(reader& r, T& out) {
  if constexpr (detail::check_decodable<T>()) {
    return detail::decode_value(r, out);
  } else {
    return decode_errc::invalid_value;
  }
}

// As above, but every heap allocation the decoder makes for out is first charged to budget;
// when a charge does not fit, decoding stops with over_budget and makes no allocation for that
// step. Charges accumulate in budget across calls. Memory out already holds is reused (and not
// charged) where it fits. What is charged: docs/codec.md, "Decode budget".
template <class T>
decode_errc decode_from(reader& r, T& out, decode_budget& budget) {
  if constexpr (detail::check_decodable<T>()) {
    detail::budget_reader br(r, budget);
    const decode_errc ec = detail::decode_value(br, out);
    r = br;  // the caller's reader moves past what was read
    return ec;
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

// As above, charging budget like decode_from(r, out, budget).
template <class T>
decode_errc decode(std::string_view bytes, T& out, decode_budget& budget) {
  reader r(bytes);
  const decode_errc ec = decode_from(r, out, budget);
  if (ec == decode_errc::ok && !r.empty()) return decode_errc::trailing_bytes;
  return ec;
}

}  // namespace corvid::codec
