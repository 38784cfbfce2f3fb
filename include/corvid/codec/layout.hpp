#pragma once
// Struct layouts. A plain aggregate is *evolvable* by default: its fields go on the wire behind a
// varint byte length, so a later version of the struct may append fields. A reader skips the
// trailing fields it does not know and gives the trailing fields it did not receive their default
// value (docs/codec.md, "Evolving a service"). A struct that will never change may opt out into
// the *frozen* layout, its fields with no prefix, which saves the prefix and keeps arrays and
// vectors of padding-free scalar structs a single memcpy:
//
//   struct point3f {
//     using codec_layout = corvid::codec::frozen;
//     float x, y, z;
//   };
//
// or, for a type that cannot be edited:
//
//   template <> inline constexpr bool corvid::codec::enable_frozen_layout<ext::vec3> = true;
//
// Freezing is itself a wire change: both sides must agree on it.
#include <type_traits>

namespace corvid::codec {

// The tag a struct names as its codec_layout to opt out of evolution.
struct frozen {};

// True for a struct that declares `using codec_layout = corvid::codec::frozen;`; specialize it
// to freeze a type without editing it.
template <class T>
inline constexpr bool enable_frozen_layout =
    requires { requires std::is_same_v<typename T::codec_layout, frozen>; };

}  // namespace corvid::codec
