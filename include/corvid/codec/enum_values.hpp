#pragma once
// Closed enums. By default an enum decodes any value of its underlying type (no UB: only enums
// with a fixed underlying type are supported), and the handler must expect values it has no
// enumerator for. An enum that lists its enumerators with an ADL-visible constexpr function
//
//   enum class color : std::uint8_t { red = 1, green = 2 };
//   constexpr auto corvid_enum_values(color) { return std::array{color::red, color::green}; }
//
// is *closed*: a value outside the list (sent by a newer peer that added an enumerator, or
// corrupt) fails to decode with decode_errc::unknown_alternative, an error for that call.
#include <cstddef>
#include <type_traits>

namespace corvid::codec {

template <class E>
concept closed_enum = std::is_enum_v<E> && requires {
  { corvid_enum_values(E{}) };
};

namespace detail {

template <closed_enum E>
inline constexpr auto known_enum_values = corvid_enum_values(E{});

template <closed_enum E>
constexpr bool is_known_enum_value(E v) noexcept {
  for (const E k : known_enum_values<E>) {
    if (k == v) return true;
  }
  return false;
}

}  // namespace detail
}  // namespace corvid::codec
