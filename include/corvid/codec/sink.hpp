#pragma once
// Where encode() writes. A sink only has to append n uninitialised bytes and say where they
// are; corvid::detail::byte_buffer is one, string_sink adapts a std::string.
#include <concepts>
#include <cstddef>
#include <string>

namespace corvid::codec {

template <class S>
concept sink = requires(S& s, std::size_t n) {
  { s.extend(n) } -> std::same_as<char*>;
};

// Appends to a std::string the caller owns (and keeps alive while the sink is used).
class string_sink {
 public:
  explicit string_sink(std::string& s) noexcept : s_(&s) {}
  char* extend(std::size_t n) {
    const std::size_t old = s_->size();
    s_->resize(old + n);  // amortised growth; the zero fill is overwritten at once
    return s_->data() + old;
  }
  std::string& str() const noexcept { return *s_; }

 private:
  std::string* s_;
};

}  // namespace corvid::codec
