#include "corvid/trace/trace_context.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

namespace corvid {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

template <std::size_t N>
void put_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  for (std::uint8_t b : bytes) {
    out += hex_digits[b >> 4];
    out += hex_digits[b & 15];
  }
}

// W3C allows lower-case hex only.
int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool read_hex(std::string_view text, std::uint8_t* out, std::size_t bytes) noexcept {
  for (std::size_t i = 0; i < bytes; ++i) {
    const int hi = hex_value(text[2 * i]);
    const int lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& a) noexcept {
  return std::all_of(a.begin(), a.end(), [](std::uint8_t b) { return b == 0; });
}

std::uint64_t seed() noexcept {
  try {
    std::random_device rd;
    return std::uint64_t{rd()} << 32 ^ rd();
  } catch (...) {  // no entropy source: the clock and the thread still tell threads apart
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
           std::hash<std::thread::id>{}(std::this_thread::get_id());
  }
}

// Ids need to be unique, not secret: a per-thread generator seeded once from the system.
template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& out) noexcept {
  thread_local std::mt19937_64 rng{seed()};
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      const std::uint64_t r = rng();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j)
        out[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
    }
  } while (all_zero(out));
}

}  // namespace

bool trace_context::valid() const noexcept { return !all_zero(trace_id) && !all_zero(span_id); }

std::string trace_context::traceparent() const {
  std::string out = "00-";
  out.reserve(55);
  put_hex(out, trace_id);
  out += '-';
  put_hex(out, span_id);
  out += '-';
  out += hex_digits[flags >> 4];
  out += hex_digits[flags & 15];
  return out;
}

std::optional<trace_context> trace_context::parse(std::string_view s) noexcept {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 bytes.
  constexpr std::size_t size = 55;
  if (s.size() < size || s[2] != '-' || s[35] != '-' || s[52] != '-') return std::nullopt;
  std::uint8_t version = 0;
  if (!read_hex(s.substr(0, 2), &version, 1) || version == 0xff) return std::nullopt;
  // Version 00 is exactly this long; a later version may append fields after a '-'.
  if (version == 0 ? s.size() != size : (s.size() > size && s[size] != '-')) return std::nullopt;
  trace_context t;
  if (!read_hex(s.substr(3, 32), t.trace_id.data(), 16) ||
      !read_hex(s.substr(36, 16), t.span_id.data(), 8) || !read_hex(s.substr(53, 2), &t.flags, 1) ||
      !t.valid()) {
    return std::nullopt;
  }
  return t;
}

trace_context trace_context::new_trace(bool sampled) noexcept {
  trace_context t;
  fill_random(t.trace_id);
  fill_random(t.span_id);
  t.flags = sampled ? 1 : 0;
  return t;
}

trace_context trace_context::child() const noexcept {
  trace_context t = *this;
  fill_random(t.span_id);
  return t;
}

}  // namespace corvid
