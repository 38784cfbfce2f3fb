#pragma once
// Function ids: the 32-bit FNV-1a hash of a handler's qualified name ("ns::echo",
// "calculator::add"), computed at compile time on both sides, so client and server agree
// without an IDL as long as they name the same function.
#include <cstdint>
#include <string_view>

namespace corvid::protocol {

constexpr std::uint32_t fnv1a32(std::string_view s) noexcept {
  std::uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 16777619u;
  }
  return h;
}

namespace detail {
template <auto F>
constexpr std::string_view raw_function_signature() noexcept {
  return __PRETTY_FUNCTION__;
}
// g++ spells the pretty name "... [with auto F = ns::echo; ...]" (members "&ns::c::f"),
// clang "... [F = &ns::echo]"; both reduce to "ns::echo".
constexpr std::string_view extract_name(std::string_view sig) noexcept {
  std::size_t start = sig.find("F = ");
  if (start == std::string_view::npos) return sig;
  start += 4;
  std::size_t end = sig.find_first_of(";]", start);
  std::string_view name = sig.substr(start, end - start);
  while (!name.empty() && (name.front() == '&' || name.front() == ' ')) name.remove_prefix(1);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  return name;
}
}  // namespace detail

// "ns::echo" for a handler `ns::echo`, "ns::calc::add" for a member function.
template <auto F>
constexpr std::string_view function_name() noexcept {
  return detail::extract_name(detail::raw_function_signature<F>());
}

// A variable, not just a constexpr function: evaluated at compile time even where the id is
// used in a runtime expression (callgrind showed the name being parsed on every call).
template <auto F>
inline constexpr std::uint32_t function_id_v = fnv1a32(function_name<F>());

// The name as a constant for the same reason: what a client call passes to its metrics.
template <auto F>
inline constexpr std::string_view function_name_v = function_name<F>();

template <auto F>
constexpr std::uint32_t function_id() noexcept {
  return function_id_v<F>;
}

}  // namespace corvid::protocol
