#pragma once
// Everything the client reads from etcd, decoded without throwing: the gateway's answers
// (a range page, a watch stream's messages, an error) and the registry's values. Whatever
// the bytes, each function returns a value or says why not; nothing here throws but
// std::bad_alloc. fuzz/etcd_answer_fuzz.cpp and fuzz/registry_value_fuzz.cpp call them
// directly, as the tests do.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "corvid/client/lb_config.hpp"
#include "corvid/expected.hpp"

#include "etcd_client.hpp"
#include "rejection.hpp"
#include <nlohmann/json_fwd.hpp>

namespace corvid::discovery {

// Base64 as the gateway writes it (RFC 4648, padded); nullopt if malformed.
std::optional<std::string> decode_base64(std::string_view in);

// A proto3 int64 field (a JSON string of decimal digits, or a JSON integer); absent or
// malformed = 0.
std::int64_t int_field(const nlohmann::json& j, const char* name) noexcept;
// A string field; absent or of another type = empty.
std::string string_field(const nlohmann::json& j, const char* name);
// The words of an error answer ({"error": ..., "message": ...}), whatever their types.
std::string error_message(const nlohmann::json& answer);

// One page of /v3/kv/range's answer.
struct range_page {
  std::vector<etcd_kv> kvs;
  std::int64_t revision = 0;   // the store's revision the page was read at
  bool more = false;           // keys after this page
  std::int64_t count = 0;      // keys in the whole range
  std::size_t unreadable = 0;  // kvs without a readable key: skipped
};
expected<range_page, std::string> decode_range_answer(std::string_view body);
expected<range_page, std::string> decode_range_answer(const nlohmann::json& answer);

// One message of /v3/watch's stream (one JSON object per line).
struct watch_message {
  enum class kind {
    ignored,    // not a JSON object: the gateway never writes one, skip it
    update,     // created, progress or events (any of them may be empty)
    compacted,  // the start revision was compacted away
    ended,      // canceled, or {"error": ...}: the stream is over
  };
  kind what = kind::ignored;
  bool created = false;
  std::int64_t revision = 0;  // the revision the message brings the watcher to
  std::vector<etcd_event> events;
  std::size_t unreadable = 0;  // events without a readable key: skipped
  std::string error;           // kind::ended
};
watch_message decode_watch_message(std::string_view line);

// A registered instance's value (registration.cpp, describe_instance): an object with a
// string "address" (check_address), an optional string "id" (default: the key) and an
// optional "weight", an integer 0..2^32-1 (0 counts as 1). Other fields are ignored, so
// servers may add some. Values over `max_value_bytes` are rejected unread.
expected<lb_endpoint, rejection> decode_instance(std::string_view key, std::string_view value,
                                                 std::size_t max_value_bytes);

}  // namespace corvid::discovery
