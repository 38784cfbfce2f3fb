// GET /connections?format=json: valid JSON whatever bytes a peer's name holds (quotes,
// backslashes, control characters, bytes that are not UTF-8), with the same keys as always.
#include <string>

#include <gtest/gtest.h>

#include "admin/admin_pages.hpp"
#include <nlohmann/json.hpp>

namespace corvid::admin {
namespace {

TEST(connections_json, escapes_every_string_and_keeps_its_keys) {
  metrics::server_snapshot s;
  const std::string hostile = std::string("a\"b\\c\n\t\x01 d") + '\0' + "e";
  s.connections.push_back({.peer = hostile, .calls = 2, .age_seconds = 1.23456});
  s.connections.push_back({.peer = "10.0.0.1:4000", .bytes_sent = 7});
  const std::string text = connections_json(s);
  const auto parsed = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << text;
  ASSERT_TRUE(parsed.is_array()) << text;
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0]["peer"], hostile);
  EXPECT_EQ(parsed[0]["transport"], "tcp");
  EXPECT_EQ(parsed[0]["calls"], 2);
  EXPECT_DOUBLE_EQ(parsed[0]["age_seconds"].get<double>(), 1.235);
  EXPECT_EQ(parsed[1]["bytes_sent"], 7);
  for (const char* key : {"peer", "transport", "bytes_received", "bytes_sent", "calls",
                          "calls_in_flight", "age_seconds"}) {
    EXPECT_TRUE(parsed[1].contains(key)) << key << " in " << text;
  }
}

TEST(connections_json, bytes_that_are_not_utf8_are_replaced_not_thrown) {
  metrics::server_snapshot s;
  s.connections.push_back({.peer = "bad\xff\xfe"});
  const std::string text = connections_json(s);
  const auto parsed = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << text;
  EXPECT_EQ(parsed[0]["peer"], "bad\xEF\xBF\xBD\xEF\xBF\xBD");  // two U+FFFD
}

TEST(connections_json, no_connections_is_an_empty_array) {
  const auto parsed = nlohmann::json::parse(connections_json(metrics::server_snapshot{}));
  EXPECT_EQ(parsed, nlohmann::json::array());
}

}  // namespace
}  // namespace corvid::admin
