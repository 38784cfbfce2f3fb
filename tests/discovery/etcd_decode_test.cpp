// The decoders of what etcd sends (src/discovery/etcd_decode.hpp), fed what no etcd writes:
// each answers with a value or a reason, never an exception.
#include "discovery/etcd_decode.hpp"

#include <gtest/gtest.h>

#include "discovery/rejection.hpp"

namespace {

using corvid::discovery::decode_base64;
using corvid::discovery::decode_instance;
using corvid::discovery::decode_range_answer;
using corvid::discovery::decode_watch_message;
using corvid::discovery::watch_message;
using corvid::metrics::discovery_reject;

discovery_reject reason_of(std::string_view value, std::size_t max = 4096) {
  auto r = decode_instance("/k", value, max);
  EXPECT_FALSE(r) << value;
  return r ? discovery_reject::over_limit : r.error().reason;
}

TEST(etcd_decode, instance_values_with_wrong_types_are_rejected_not_thrown) {
  EXPECT_EQ(reason_of(R"({"id": 7, "address": "127.0.0.1:9000"})"), discovery_reject::bad_field);
  EXPECT_EQ(reason_of(R"({"id": null, "address": "127.0.0.1:9000"})"), discovery_reject::bad_field);
  EXPECT_EQ(reason_of(R"({"address": 9000})"), discovery_reject::bad_field);
  EXPECT_EQ(reason_of(R"({"address": "127.0.0.1:1", "weight": "3"})"), discovery_reject::bad_field);
  EXPECT_EQ(reason_of(R"({"address": "127.0.0.1:1", "weight": 1.5})"), discovery_reject::bad_field);
  EXPECT_EQ(reason_of(R"({"address": "127.0.0.1:1", "weight": 4294967296})"),
            discovery_reject::bad_field);
  EXPECT_EQ(reason_of("[]"), discovery_reject::not_json);
  EXPECT_EQ(reason_of("\"x\""), discovery_reject::not_json);
  EXPECT_EQ(reason_of("{"), discovery_reject::not_json);
  EXPECT_EQ(reason_of(""), discovery_reject::not_json);
  EXPECT_EQ(reason_of(std::string(5000, ' ')), discovery_reject::too_large);
}

TEST(etcd_decode, addresses_must_be_host_and_port_or_a_unix_path) {
  for (const char* a : {"", "no-port", "127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:", ":80",
                        "[]:80", "127.0.0.1:+80", "127.0.0.1:80x", "a b:80", "unix:"}) {
    EXPECT_EQ(reason_of(std::string(R"({"address": ")") + a + "\"}"), discovery_reject::bad_address)
        << a;
  }
  for (const char* a : {"127.0.0.1:1", "host.example:65535", "[::1]:80", "unix:/tmp/s.sock"}) {
    auto r = decode_instance("/k", std::string(R"({"address": ")") + a + "\"}", 4096);
    ASSERT_TRUE(r) << a << ": " << r.error().detail;
    EXPECT_EQ(r->address, a);
    EXPECT_EQ(r->id, "/k");  // no id: the key
  }
  auto r = decode_instance("/k", R"({"id": "i", "address": "h:1", "weight": 0, "x": [1]})", 4096);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, "i");
  EXPECT_EQ(r->weight, 1u);
}

TEST(etcd_decode, base64_is_strict) {
  EXPECT_EQ(decode_base64("aGVsbG8="), "hello");
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_FALSE(decode_base64("aGVsbG8"));
  EXPECT_FALSE(decode_base64("===="));
  EXPECT_FALSE(decode_base64("a==="));
  EXPECT_FALSE(decode_base64("aG=s"));
  EXPECT_FALSE(decode_base64("aGV*"));
}

TEST(etcd_decode, range_answers_of_the_wrong_shape_are_errors_or_skipped_entries) {
  EXPECT_FALSE(decode_range_answer("[]"));
  EXPECT_FALSE(decode_range_answer("{}"));  // no revision
  auto p = decode_range_answer(
      R"({"header": {"revision": "12"}, "more": true, "count": "40",
          "kvs": [7, {"key": 5}, {"key": "!!"}, {"key": "L2s="},
                  {"key": "L2E=", "value": 3}, {"key": "L2I=", "value": "eyJ9"}]})");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->revision, 12);
  EXPECT_TRUE(p->more);
  EXPECT_EQ(p->count, 40);
  EXPECT_EQ(p->unreadable, 3u);
  ASSERT_EQ(p->kvs.size(), 3u);
  EXPECT_EQ(p->kvs[0].key, "/k");
  EXPECT_EQ(p->kvs[1].key, "/a");
  EXPECT_TRUE(p->kvs[1].value_unreadable);
  EXPECT_EQ(p->kvs[2].value, "{\"}");
  auto q = decode_range_answer(R"({"header": {"revision": 99999999999999999999}, "kvs": {}})");
  EXPECT_FALSE(q);  // a revision that is no int64
}

TEST(etcd_decode, watch_messages_of_the_wrong_shape_are_ignored_or_end_the_stream) {
  EXPECT_EQ(decode_watch_message("garbage").what, watch_message::kind::ignored);
  EXPECT_EQ(decode_watch_message("[1]").what, watch_message::kind::ignored);
  auto e = decode_watch_message(R"({"error": {"grpc_code": 14, "message": 5}})");
  EXPECT_EQ(e.what, watch_message::kind::ended);
  EXPECT_EQ(decode_watch_message(R"({"result": 3})").what, watch_message::kind::ended);
  EXPECT_EQ(decode_watch_message(R"({"result": {"compact_revision": "4"}})").what,
            watch_message::kind::compacted);
  EXPECT_EQ(decode_watch_message(R"({"result": {"canceled": true}})").what,
            watch_message::kind::ended);
  auto m = decode_watch_message(
      R"({"result": {"header": {"revision": "9"}, "created": "yes", "canceled": 1,
          "events": [1, {"kv": 2}, {"type": 5, "kv": {"key": "L2s=", "mod_revision": 11}},
                     {"type": "DELETE", "kv": {"key": "L2E="}}]}})");
  EXPECT_EQ(m.what, watch_message::kind::update);
  EXPECT_FALSE(m.created);
  EXPECT_EQ(m.revision, 11);
  EXPECT_EQ(m.unreadable, 2u);
  ASSERT_EQ(m.events.size(), 2u);
  EXPECT_FALSE(m.events[0].deleted);
  EXPECT_TRUE(m.events[1].deleted);
}

}  // namespace
