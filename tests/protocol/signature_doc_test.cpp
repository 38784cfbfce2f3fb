// The fingerprint vectors of docs/protocol.md ("How the fingerprint is computed"): each row's
// canonical form and fingerprint must be what this build computes for the C++ declaration the
// row names. Another implementation (python/) checks the same rows, so both agree on the text.
#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "corvid/codec/layout.hpp"
#include "corvid/detail/function_traits.hpp"
#include "corvid/protocol/signature.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/stream/stream.hpp"
#include "corvid/stream/stream_reader.hpp"
#include "corvid/task.hpp"

namespace docsig {
struct point {
  int x;
  double y;
};
struct point3f {
  using codec_layout = corvid::codec::frozen;
  float x, y, z;
};
enum class shape : std::uint8_t { circle, square };
enum class color { red, green };
inline point move(point p, int) { return p; }
inline std::optional<std::vector<std::uint8_t>> kinds(
    std::map<std::string, std::int64_t>, std::set<std::uint16_t>,
    std::variant<std::monostate, std::int32_t, std::string>, std::pair<std::uint8_t, bool>,
    std::array<std::int8_t, 3>, std::vector<bool>, double, float, std::uint64_t) {
  return {};
}
inline color paint(point3f, shape) { return color::red; }
inline std::string_view echo(std::string_view s) { return s; }
inline void store(corvid::request_context&, std::string) {}
struct calc {
  int add(int a, int b) const { return a + b; }
};
inline corvid::stream<int> count_to(int) { co_return; }
inline corvid::task<std::uint64_t> upload(corvid::stream_reader<std::string>) { co_return 0; }
inline corvid::stream<std::string> chat(std::string, corvid::stream_reader<std::string>) {
  co_return;
}
inline void ping() {}
}  // namespace docsig

namespace {

struct text_out {
  std::string s;
  void add(std::string_view v) { s += v; }
  void add_number(std::size_t n) { s += std::to_string(n); }
};

// "(P1,P2)->R", as protocol::detail::fingerprint hashes it.
template <auto F>
std::string canonical_signature() {
  using traits = corvid::detail::function_traits<decltype(F)>;
  text_out t;
  t.add("(");
  [&]<class... P>(std::tuple<P...>*) {
    corvid::protocol::detail::add_list<P...>(t, ",");
  }(static_cast<corvid::detail::schema_params_t<F>*>(nullptr));
  t.add(")->");
  corvid::protocol::detail::add_type<std::remove_cvref_t<typename traits::result_type>>(t);
  return t.s;
}

template <auto F>
std::pair<std::string, std::uint16_t> row() {
  return {canonical_signature<F>(), corvid::protocol::signature_v<F>};
}

// The declaration text of each row -> what this build computes for it.
std::map<std::string, std::pair<std::string, std::uint16_t>> computed() {
  using namespace docsig;
  return {
      {"std::string_view echo(std::string_view)", row<echo>()},
      {"void store(corvid::request_context&, std::string)", row<store>()},
      {"int ns::calc::add(int, int) const", row<&calc::add>()},
      {"docsig::point move(docsig::point, int)", row<move>()},
      {"std::optional<std::vector<std::uint8_t>> kinds(std::map<std::string, std::int64_t>, "
       "std::set<std::uint16_t>, std::variant<std::monostate, std::int32_t, std::string>, "
       "std::pair<std::uint8_t, bool>, std::array<std::int8_t, 3>, std::vector<bool>, double, "
       "float, std::uint64_t)",
       row<kinds>()},
      {"docsig::color paint(docsig::point3f, docsig::shape)", row<paint>()},
      {"corvid::stream<int> count_to(int)", row<count_to>()},
      {"corvid::task<std::uint64_t> upload(corvid::stream_reader<std::string>)", row<upload>()},
      {"corvid::stream<std::string> chat(std::string, corvid::stream_reader<std::string>)",
       row<chat>()},
      {"void ping()", row<ping>()},
  };
}

struct doc_row {
  std::string canonical;
  std::uint16_t fingerprint;
  std::string declaration;
};

std::vector<doc_row> doc_rows() {
  std::ifstream in(CORVID_PROTOCOL_DOC);
  if (!in) throw std::runtime_error("cannot open " CORVID_PROTOCOL_DOC);
  std::vector<doc_row> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line == "```text fingerprints";
      continue;
    }
    if (line.starts_with("```")) break;
    // canonical form, 2+ spaces, 0xNNNN, 2+ spaces, declaration
    const auto a = line.find("  ");
    const auto b = line.find("0x", a);
    const auto c = line.find_first_not_of(' ', line.find(' ', b));
    if (a == std::string::npos || b == std::string::npos || c == std::string::npos)
      throw std::runtime_error("malformed fingerprint row: " + line);
    rows.push_back({line.substr(0, a),
                    static_cast<std::uint16_t>(std::stoul(line.substr(b, 6), nullptr, 16)),
                    line.substr(c)});
  }
  return rows;
}

TEST(SignatureDoc, EveryRowIsWhatThisBuildComputes) {
  const auto want = computed();
  const auto rows = doc_rows();
  ASSERT_EQ(rows.size(), want.size()) << "the doc's fingerprint table and this test differ";
  for (const auto& r : rows) {
    const auto it = want.find(r.declaration);
    ASSERT_NE(it, want.end()) << "no C++ declaration for the doc's row: " << r.declaration;
    EXPECT_EQ(it->second.first, r.canonical) << r.declaration;
    EXPECT_EQ(it->second.second, r.fingerprint) << r.declaration;
  }
}

}  // namespace
