#pragma once
// Server-side handlers for the hostile-peer tests and the attack bench (issue 11): each gives
// an attacker a lever. Shared by hostile_peers_test.cpp and attack_bench.cpp.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <corvid/corvid.hpp>

namespace corvid_hostile {

// A named namespace, so the function names (and ids) are the same for every compiler.
// The reply amplifier: a 36-byte request answered with up to 8 MiB.
inline std::string big(std::uint32_t n) { return std::string(std::min(n, 8u << 20), 'r'); }
// Arguments whose decoded size is a large multiple of their encoded size: one byte per
// element on the wire (a count, an empty optional, an empty string, a variant's index)
// against 4097, 32, 24, ~80 or 4098 bytes in memory.
using page = std::optional<std::array<std::uint8_t, 4096>>;
inline std::uint64_t count_pages(std::vector<page> v) { return v.size(); }
inline std::uint64_t count_strings(std::vector<std::string> v) { return v.size(); }
inline std::uint64_t count_nested(std::vector<std::vector<std::int32_t>> v) { return v.size(); }
inline std::uint64_t count_map(std::map<std::uint32_t, std::string> m) { return m.size(); }
using blob = std::variant<std::monostate, std::array<std::uint8_t, 4096>>;
inline std::uint64_t count_variants(std::vector<blob> v) { return v.size(); }

// A set key whose comparison throws for one value: decoding a set holding it throws out of
// the codec (docs/codec.md: "an exception thrown by a user type's hash or comparison").
struct touchy_key {
  std::int32_t v;
  static constexpr std::int32_t poison = 666;
  bool operator<(const touchy_key& o) const {
    if (v == poison || o.v == poison) throw std::runtime_error("touchy_key: poisoned compare");
    return v < o.v;
  }
};
inline std::uint64_t count_touchy(std::set<touchy_key> s) { return s.size(); }
inline corvid::task<std::uint64_t> count_touchy_co(std::set<touchy_key> s) { co_return s.size(); }

// A slow coroutine call: sleeps `ms` unless cancelled. `slow_running` counts the calls alive
// (started, not yet ended) and `slow_started` every start, so a test sees whether calls ran
// and whether cancellation ended them.
inline std::atomic<std::int64_t> slow_running{0};
inline std::atomic<std::int64_t> slow_started{0};
inline corvid::task<std::int32_t> slow(corvid::request_context& ctx, std::int32_t ms) {
  ++slow_started;
  ++slow_running;
  struct leave {
    ~leave() { --slow_running; }
  } on_exit;
  co_await ctx.sleep_for(std::chrono::milliseconds(ms));
  co_return ms;
}

}  // namespace corvid_hostile
