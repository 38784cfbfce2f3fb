// method_config: which entry a method's settings come from, and the JSON form (every
// malformed or misspelt document is refused with a message naming what is wrong).
#include <gtest/gtest.h>

#include <corvid/client/method_config.hpp>

namespace shop {
inline int get_user(int id) { return id; }
}  // namespace shop

namespace {

using namespace std::chrono_literals;

TEST(method_config, each_setting_comes_from_the_most_specific_entry_that_has_it) {
  corvid::method_config m;
  m.set("*", {.timeout = 1000ms, .max_attempts = 2});
  m.set("shop::", {.timeout = 300ms, .idempotent = false});
  m.set<&shop::get_user>({.idempotent = true, .hedging = corvid::hedging_policy{}});
  const auto p = m.resolve<&shop::get_user>();
  EXPECT_EQ(p.timeout, 300ms);    // its namespace's
  EXPECT_EQ(p.idempotent, true);  // its own
  EXPECT_EQ(p.max_attempts, 2u);  // "*"'s
  EXPECT_TRUE(p.hedging);
  const auto other = m.resolve(corvid::protocol::fnv1a32("shop::list"), "shop::list");
  EXPECT_EQ(other.timeout, 300ms);
  EXPECT_EQ(other.idempotent, false);
  EXPECT_FALSE(other.hedging);
  const auto elsewhere = m.resolve(corvid::protocol::fnv1a32("echo"), "echo");
  EXPECT_EQ(elsewhere.timeout, 1000ms);
  EXPECT_FALSE(elsewhere.idempotent);
}

TEST(method_config, the_longest_namespace_wins_and_a_name_set_again_replaces_its_entry) {
  corvid::method_config m;
  m.set("a::", {.timeout = 1ms});
  m.set("a::b::", {.timeout = 2ms});
  m.set("a::b::", {.timeout = 3ms});
  EXPECT_EQ(m.resolve(0, "a::b::f").timeout, 3ms);
  EXPECT_EQ(m.resolve(0, "a::c").timeout, 1ms);
  EXPECT_FALSE(m.resolve(0, "ab::f").timeout);
}

TEST(method_config, parses_the_shared_json_form) {
  auto m = corvid::method_config::parse(R"({"methods": [
      {"name": "shop::get_user", "timeout_ms": 200, "idempotent": true, "max_attempts": 3,
       "hedging": {"max_copies": 3, "delay_ms": 15, "delay_quantile": 0.95}, "compress": false},
      {"name": "*", "timeout_ms": 5000}]})");
  ASSERT_TRUE(m) << m.error();
  const auto p = m->resolve<&shop::get_user>();
  EXPECT_EQ(p.timeout, 200ms);
  EXPECT_EQ(p.idempotent, true);
  EXPECT_EQ(p.max_attempts, 3u);
  ASSERT_TRUE(p.hedging);
  EXPECT_EQ(p.hedging->max_copies, 3u);
  EXPECT_EQ(p.hedging->delay, 15ms);
  EXPECT_DOUBLE_EQ(p.hedging->delay_quantile, 0.95);
  EXPECT_EQ(p.compress, false);
  EXPECT_TRUE(m->uses_delay_quantile());
  EXPECT_EQ(m->resolve(0, "x").timeout, 5000ms);
  EXPECT_FALSE(m->resolve(0, "x").compress);
}

TEST(method_config, refuses_malformed_and_misspelt_documents) {
  const char* bad[] = {
      "",
      "[]",
      "{\"methods\": {}}",
      "{\"method\": []}",
      "{\"methods\": [{\"timeout_ms\": 5}]}",
      "{\"methods\": [{\"name\": \"\"}]}",
      "{\"methods\": [{\"name\": \"f\", \"timeout\": 5}]}",
      "{\"methods\": [{\"name\": \"f\", \"timeout_ms\": -1}]}",
      "{\"methods\": [{\"name\": \"f\", \"timeout_ms\": 0}]}",
      "{\"methods\": [{\"name\": \"f\", \"timeout_ms\": 1.5}]}",
      "{\"methods\": [{\"name\": \"f\", \"timeout_ms\": 1e30}]}",
      "{\"methods\": [{\"name\": \"f\", \"idempotent\": 1}]}",
      "{\"methods\": [{\"name\": \"f\", \"compress\": \"yes\"}]}",
      "{\"methods\": [{\"name\": \"f\", \"max_attempts\": 0}]}",
      "{\"methods\": [{\"name\": \"f\", \"max_attempts\": 1000}]}",
      "{\"methods\": [{\"name\": \"f\", \"hedging\": {\"copies\": 2}}]}",
      "{\"methods\": [{\"name\": \"f\", \"hedging\": {\"max_copies\": 100}}]}",
      "{\"methods\": [{\"name\": \"f\", \"hedging\": {\"delay_quantile\": 1}}]}",
      "{\"methods\": [{\"name\": \"f\", \"hedging\": 3}]}",
      "{\"methods\": [1]}",
  };
  for (const char* doc : bad) {
    auto m = corvid::method_config::parse(doc);
    EXPECT_FALSE(m) << doc;
    if (!m) {
      EXPECT_FALSE(m.error().empty()) << doc;
    }
  }
}

}  // namespace
