// zstd framing (src/protocol/compression.hpp): what deflate writes inflates to exactly what it
// was given, and a payload that lies about its inflated size is refused, never followed.
#include "protocol/compression.hpp"

#include <string>

#include <gtest/gtest.h>

#include "compressible_text.hpp"

namespace corvid::protocol {
namespace {

using corvid::test::json_like;

// Sets the declared sizes of a compressed payload (its 8-byte head).
void declare(std::string& packed, std::uint32_t body, std::uint32_t attachment) {
  for (int i = 0; i < 4; ++i) {
    packed[i] = static_cast<char>(body >> (8 * i));
    packed[4 + i] = static_cast<char>(attachment >> (8 * i));
  }
}

TEST(compression, round_trips_a_body_and_an_attachment) {
  const std::string body = json_like(40000), attachment = json_like(12345);
  std::string packed;
  ASSERT_TRUE(deflate(body, attachment, 1, packed));
  EXPECT_LT(packed.size(), (body.size() + attachment.size()) / 4);
  const auto sizes = read_inflated_sizes(packed);
  ASSERT_TRUE(sizes);
  EXPECT_EQ(sizes->body, body.size());
  EXPECT_EQ(sizes->attachment, attachment.size());
  std::string out;
  EXPECT_EQ(inflate(packed, out), "");
  EXPECT_EQ(out, body + attachment);
}

TEST(compression, what_would_not_shrink_is_not_compressed) {
  std::string noise(4096, '\0');
  std::uint32_t x = 12345;
  for (char& c : noise) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  std::string packed = "keep";
  EXPECT_FALSE(deflate(noise, {}, 1, packed));
  EXPECT_EQ(packed, "keep");  // left as it was
}

TEST(compression, a_payload_that_inflates_past_its_declared_size_is_refused) {
  std::string packed;
  ASSERT_TRUE(deflate(std::string(1 << 20, 'z'), {}, 1, packed));
  declare(packed, 1000, 0);  // claims 1000 bytes, holds a MiB
  std::string out;
  EXPECT_EQ(inflate(packed, out),
            "a compressed payload inflates to more than its declared 1000 bytes");
  EXPECT_LE(out.size(), 1000u);  // never more room than declared
}

TEST(compression, a_payload_that_inflates_short_of_its_declared_size_is_refused) {
  std::string packed;
  ASSERT_TRUE(deflate(std::string(1000, 'z'), {}, 1, packed));
  declare(packed, 5000, 0);
  std::string out;
  EXPECT_EQ(inflate(packed, out),
            "a compressed payload inflates to 1000 bytes, not its declared 5000");
}

TEST(compression, garbage_and_short_payloads_are_refused) {
  std::string out;
  EXPECT_EQ(inflate("1234567", out), "a compressed payload shorter than its 8-byte head");
  std::string garbage(8, '\0');
  declare(garbage, 10, 0);
  garbage += "not a zstd frame";
  EXPECT_NE(inflate(garbage, out).find("does not inflate"), std::string::npos);
}

}  // namespace
}  // namespace corvid::protocol
