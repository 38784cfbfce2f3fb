// Fuzzes corvid::codec's decoder, which parses every argument a server receives and every
// result a client receives. Byte 0 picks a type from a representative set, the rest is decoded
// as that type. For every value the decoder accepts:
//   * encoded_size(value) == bytes consumed, and encode(value) writes exactly that many bytes;
//   * for types whose encoding is canonical (docs/codec.md: no type has two encodings except
//     maps/sets, whose decoder accepts keys in any order, and evolvable structs, whose bodies
//     may be short or long) the re-encoding is the input prefix, byte for byte — e.g. a
//     non-minimal varint must have been rejected; with evolvable structs inside, the
//     re-encoding is a fixed point (it decodes to a value that encodes to it again);
//   * an older version of the message (fewer trailing fields, also in nested structs) reads
//     every input the newer one accepts, consuming the same bytes and agreeing on the fields
//     it has; and the newer one reads what the older one encodes, defaulting the rest;
//   * the re-encoding decodes again, to an equal value, and encodes to the same bytes;
//   * decode() (whole input) agrees with decode_from() (prefix) on the result;
//   * decoding over an object that already holds another value (left by a decode of other,
//     fuzzer-chosen bytes, possibly a failed one) gives the same value: decode overwrites.
// And for every input, accepted or not, decoding with a decode_budget:
//   * never charges more than the limit, and gives the plain decode's result or over_budget;
//   * with an unlimited budget gives the plain result, charging some `needed` bytes; a budget
//     of exactly `needed` gives the plain result too and one byte less gives over_budget (the
//     charges are made in the same order every time);
//   * under a small budget picked by byte 0's high bits (0 to 3,840 bytes) gives over_budget
//     exactly when `needed` is over it, else the plain result and value, and decoding the same
//     input again over what that left (reusing its memory) stays within a fresh budget.
// ASan/UBSan catch any out-of-bounds read, bad bool/enum load or overflow on the way.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include "corvid/codec/codec.hpp"

namespace {

namespace codec = corvid::codec;

enum class color : std::uint8_t { red = 1, green = 2 };
enum class toggle : bool { off, on };  // validated like bool

struct leaf {
  std::uint32_t id;
  std::string name;
  std::vector<std::int16_t> values;
  std::optional<std::string> note;
  color c;
  bool operator==(const leaf&) const = default;
};
struct rgb {  // frozen and bulk: memcpy'd as a whole, also inside vectors
  using codec_layout = codec::frozen;
  std::uint8_t r, g, b;
  bool operator==(const rgb&) const = default;
};
struct padded {  // frozen, not bulk (padding after `tag`): field by field
  using codec_layout = codec::frozen;
  std::uint8_t tag;
  std::uint64_t value;
  bool operator==(const padded&) const = default;
};
// Canonical nested aggregate: no maps or sets inside.
struct message {
  leaf head;
  std::vector<leaf> items;
  std::variant<std::monostate, std::int32_t, std::string, leaf> choice;
  std::optional<std::vector<std::string>> tags;
  std::tuple<bool, toggle, std::vector<bool>> flags;
  std::vector<rgb> pixels;
  std::array<padded, 2> pair;
  bool operator==(const message&) const = default;
};
// message and leaf as an older build declared them: trailing fields missing.
struct leaf_v1 {
  std::uint32_t id;
  std::string name;
  std::vector<std::int16_t> values;
};
struct message_v1 {
  leaf_v1 head;
  std::vector<leaf_v1> items;
  std::variant<std::monostate, std::int32_t, std::string, leaf_v1> choice;
};

// Nested aggregate with maps and sets (keys may arrive in any order: not canonical).
struct registry {
  std::map<std::string, leaf> by_name;
  std::set<std::uint16_t> ids;
  std::vector<std::map<std::int32_t, std::optional<std::string>>> shards;
  std::optional<std::variant<std::set<std::string>, std::vector<std::uint64_t>>> extra;
  bool operator==(const registry&) const = default;
};
// Floats: compared by re-encoding (NaN != NaN), which is bit-exact per docs/codec.md.
struct sample {
  float f;
  double d;
  std::vector<double> series;
  std::optional<std::variant<float, std::string>> label;
};

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "codec_fuzz: %s\n", what);
    std::abort();  // libFuzzer records the input and the stack
  }
}

template <class T>
std::string encode_to_string(const T& value) {
  std::string out;
  codec::string_sink sink(out);
  codec::encode(sink, value);
  return out;
}

// How the re-encoding of an accepted value relates to the input.
enum class order {
  canonical,    // byte for byte the input prefix
  sorted_keys,  // std::map/std::set inside: same size; re-encoding is sorted, so stable
  any_order,    // std::unordered_*: same size; iteration order may differ between copies
  evolvable,    // evolvable structs inside: the first re-encoding may differ in size (a short
                // or long body), and is stable from then on (sorted keys allowed too)
};
enum class equality { operator_eq, by_encoding };

template <equality Eq, class T>
bool same_value(const T& a, const T& b) {
  if constexpr (Eq == equality::operator_eq) {
    return a == b;
  } else {
    return encode_to_string(a) == encode_to_string(b);
  }
}

// The decode_budget checks (see the top of the file). plain_ec / plain are decode()'s result
// and value, without a budget.
template <class T, equality Eq>
void run_budgets(std::string_view input, codec::decode_errc plain_ec, const T& plain,
                 std::size_t small_limit) {
  using codec::decode_errc;
  T counted{};
  codec::decode_budget unlimited(std::numeric_limits<std::size_t>::max());
  check(codec::decode(input, counted, unlimited) == plain_ec,
        "an unlimited budget changed the result");
  const std::size_t needed = unlimited.used();

  T exact{};
  codec::decode_budget exact_budget(needed);
  check(codec::decode(input, exact, exact_budget) == plain_ec,
        "a budget of exactly what is needed changed the result");
  check(exact_budget.used() == needed, "a budget of exactly what is needed charged differently");
  if (needed != 0) {
    T less{};
    codec::decode_budget less_budget(needed - 1);
    check(codec::decode(input, less, less_budget) == decode_errc::over_budget,
          "a budget one byte short of what is needed did not give over_budget");
    check(less_budget.used() <= less_budget.limit(), "charged past the limit");
  }

  T small{};
  codec::decode_budget small_budget(small_limit);
  const decode_errc small_ec = codec::decode(input, small, small_budget);
  check(small_budget.used() <= small_budget.limit(), "charged past the limit");
  check(small_ec == (needed > small_limit ? decode_errc::over_budget : plain_ec),
        "a small budget: not over_budget exactly when the need is over it");
  if (small_ec == decode_errc::ok)
    check(same_value<Eq>(small, plain), "a budget changed the value");

  // Again over what that left: reused memory is not charged twice, but must still be counted
  // right where it does not fit.
  codec::decode_budget again_budget(small_limit);
  const decode_errc again_ec = codec::decode(input, small, again_budget);
  check(again_budget.used() <= again_budget.limit(), "charged past the limit (reusing)");
  check(again_ec == plain_ec || again_ec == decode_errc::over_budget,
        "a budget over a used object: neither the plain result nor over_budget");
  if (again_ec == decode_errc::ok) {
    check(same_value<Eq>(small, plain), "a budget over a used object changed the value");
  }
}

template <class T, order Order = order::canonical, equality Eq = equality::operator_eq>
void run(std::string_view input, std::size_t budget_limit) {
  codec::reader r(input);
  T value{};
  const codec::decode_errc ec = codec::decode_from(r, value);
  T whole{};
  const codec::decode_errc whole_ec = codec::decode(input, whole);
  run_budgets<T, Eq>(input, whole_ec, whole, budget_limit);
  if (ec != codec::decode_errc::ok) {
    check(whole_ec == ec, "decode() and decode_from() disagree on an error");
    return;  // malformed: nothing more to check
  }
  const std::size_t consumed = input.size() - r.remaining();
  check(whole_ec == (r.empty() ? codec::decode_errc::ok : codec::decode_errc::trailing_bytes),
        "decode() and decode_from() disagree");

  const std::string encoded = encode_to_string(value);
  check(codec::encoded_size(value) == encoded.size(), "encoded_size differs from encode");
  if constexpr (Order != order::evolvable)
    check(encoded.size() == consumed, "re-encoding has a different size");
  if constexpr (Order == order::canonical)
    check(encoded == input.substr(0, consumed), "re-encoding differs from the input");

  // Decode the re-encoding into an object that holds whatever decoding the rest of the input
  // left behind (a different value, or a half-decoded one after an error).
  T again{};
  (void)codec::decode(input.substr(consumed), again);
  check(codec::decode(encoded, again) == codec::decode_errc::ok, "re-encoding does not decode");
  static_assert(Eq == equality::operator_eq || Order != order::any_order);
  if constexpr (Eq == equality::operator_eq)
    check(again == value, "decoded again: a different value");
  if constexpr (Order != order::any_order)
    check(encode_to_string(again) == encoded, "decoded again: different bytes");
  check(codec::encoded_size(again) == encoded.size(), "decoded again: a different size");

  // View types decode the same bytes into their owning form (what a client receives).
  if constexpr (!std::is_same_v<codec::owning_t<T>, T>) {
    codec::owning_t<T> owned{};
    check(codec::decode(encoded, owned) == codec::decode_errc::ok, "owning_t does not decode");
    check(encode_to_string(owned) == encoded, "owning_t re-encodes differently");
  }
}

bool same_leaf(const leaf& n, const leaf_v1& o) {
  return n.id == o.id && n.name == o.name && n.values == o.values;
}

// The older message reads whatever the newer one accepts, and the newer one reads what the
// older one writes.
void run_versions(std::string_view input) {
  codec::reader r(input);
  message newer{};
  if (codec::decode_from(r, newer) != codec::decode_errc::ok) return;
  codec::reader old_r(input);
  message_v1 older{};
  check(codec::decode_from(old_r, older) == codec::decode_errc::ok,
        "the older message rejects what the newer one accepts");
  check(old_r.remaining() == r.remaining(), "the older message consumed other bytes");
  check(same_leaf(newer.head, older.head), "the older message read another head");
  check(newer.items.size() == older.items.size(), "the older message read other items");
  for (std::size_t i = 0; i < newer.items.size(); ++i)
    check(same_leaf(newer.items[i], older.items[i]), "the older message read another item");
  check(newer.choice.index() == older.choice.index(), "the older message read another choice");

  message back{};
  check(codec::decode(encode_to_string(older), back) == codec::decode_errc::ok,
        "the newer message rejects what the older one writes");
  check(same_leaf(back.head, older.head) && back.head.note == std::nullopt &&
            back.head.c == color{} && back.tags == std::nullopt && back.pixels.empty(),
        "the newer message did not default the fields the older one lacks");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return -1;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Byte 0's high bits: a budget small enough that typical inputs run into it.
  const std::size_t budget_limit = static_cast<std::size_t>(data[0] >> 4) * 256;
  using any = std::variant<std::monostate, std::int64_t, std::string, std::vector<bool>>;
  switch (data[0] % 16) {
    case 0:
      run<message, order::evolvable>(input, budget_limit);
      run_versions(input);
      break;
    case 1:
      run<registry, order::evolvable>(input, budget_limit);
      break;
    case 2:
      run<std::string_view>(input, budget_limit);
      break;
    case 3:
      run<std::vector<std::string>>(input, budget_limit);
      break;
    case 4:
      run<std::map<int, std::vector<std::uint8_t>>, order::sorted_keys>(input, budget_limit);
      break;
    case 5:
      run<std::optional<any>>(input, budget_limit);
      break;
    case 6:
      run<std::tuple<std::uint8_t, std::string, bool, std::optional<std::int32_t>>>(input,
                                                                                    budget_limit);
      break;
    case 7:
      run<std::array<std::uint16_t, 4>>(input, budget_limit);
      break;
    case 8:
      run<std::array<std::optional<std::string>, 3>>(input, budget_limit);
      break;
    case 9:
      run<sample, order::evolvable, equality::by_encoding>(input, budget_limit);
      break;
    case 10:
      run<std::pair<std::string_view, std::span<const std::byte>>, order::canonical,
          equality::by_encoding>(input, budget_limit);
      break;
    case 11:
      run<std::unordered_map<std::string, std::int32_t>, order::any_order>(input, budget_limit);
      break;
    case 12:
      run<std::vector<std::variant<bool, color, std::string_view>>>(input, budget_limit);
      break;
    case 13:
      run<std::vector<leaf>, order::evolvable>(input, budget_limit);
      break;
    case 14:
      run<std::tuple<std::vector<rgb>, std::vector<padded>, std::set<std::string>>,
          order::sorted_keys>(input, budget_limit);
      break;
    case 15:
      run<std::vector<std::vector<std::tuple<std::string, toggle>>>>(input, budget_limit);
      break;
  }
  return 0;
}
