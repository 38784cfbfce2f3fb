#pragma once
// decode_budget: a byte limit on the memory that decoding may allocate. The codec checks every
// count against the bytes that remain, but a count of small-on-the-wire elements can still need
// far more memory than the input holds (a 1-byte empty optional<array<char, 4096>>, a 1-byte
// empty string that is 32 bytes in a vector). With a budget, the decoder charges each
// allocation here *before* making it and stops with decode_errc::over_budget when the charge
// does not fit, so a peer cannot make the decoder allocate more than the limit it was given.
// What is charged, and how it is estimated: docs/codec.md, "Decode budget".
#include <cstddef>

namespace corvid::codec {

class decode_budget {
 public:
  explicit decode_budget(std::size_t limit) noexcept : limit_(limit) {}

  // Charges bytes if they fit in what is left of the limit; otherwise charges nothing and
  // returns false. Comparing against limit_ - used_ (never negative: used_ <= limit_ always)
  // instead of computing used_ + bytes cannot overflow, whatever bytes is.
  [[nodiscard]] bool take(std::size_t bytes) noexcept {
    if (bytes > limit_ - used_) return false;
    used_ += bytes;
    return true;
  }

  std::size_t used() const noexcept { return used_; }
  std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t limit_;
  std::size_t used_ = 0;
};

}  // namespace corvid::codec
