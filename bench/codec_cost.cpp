// corvid-codec-cost: the codec's cost for one small struct argument, evolvable vs frozen
// (docs/benchmarks.md, "Schema evolution"). Encodes and decodes the struct `n` times into
// reused buffers; run it under callgrind and divide the instructions by n:
//   valgrind --tool=callgrind build/release/bench/corvid-codec-cost evolvable 1000000
// It prints the encoded size of each layout.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <corvid/codec/codec.hpp>

namespace {

// A typical small request struct: fixed fields and a short string.
struct order {
  std::uint64_t id;
  std::uint32_t quantity;
  std::string symbol;
  bool operator==(const order&) const = default;
};
struct frozen_order {
  using codec_layout = corvid::codec::frozen;
  std::uint64_t id;
  std::uint32_t quantity;
  std::string symbol;
  bool operator==(const frozen_order&) const = default;
};
// Padding-free scalars: one memcpy each way in either layout.
struct tick {
  std::uint64_t time;
  double price;
};
struct frozen_tick {
  using codec_layout = corvid::codec::frozen;
  std::uint64_t time;
  double price;
};

template <class T>
int run(const T& value, long n) {
  std::string buf;
  T out{};
  for (long i = 0; i < n; ++i) {
    buf.clear();
    corvid::codec::string_sink sink(buf);
    corvid::codec::encode(sink, value);
    if (corvid::codec::decode(buf, out) != corvid::codec::decode_errc::ok) return 1;
  }
  std::printf("%zu bytes\n", corvid::codec::encoded_size(value));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view layout = argc > 1 ? argv[1] : "";
  const long n = argc > 2 ? std::atol(argv[2]) : 1000000;
  if (layout == "evolvable") return run(order{42, 100, "CORVID-2026"}, n);
  if (layout == "frozen") return run(frozen_order{42, 100, "CORVID-2026"}, n);
  if (layout == "evolvable-tick") return run(tick{1, 2.5}, n);
  if (layout == "frozen-tick") return run(frozen_tick{1, 2.5}, n);
  std::fprintf(stderr,
               "usage: corvid-codec-cost evolvable|frozen|evolvable-tick|frozen-tick [n]\n");
  return 2;
}
