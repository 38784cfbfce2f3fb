#pragma once
// The JSON that describe_schema writes, read back: objects, arrays, strings, numbers, true,
// false and null. Enough for schema files; not a general-purpose parser (no \u escapes).
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace corvid::schema {

struct json {
  enum class type { null, boolean, number, string, array, object } t = type::null;
  std::string text;  // string; a number's digits; "true"/"false"
  std::vector<json> items;
  std::map<std::string, json> members;

  // The member `key` of an object, or a null value when there is none.
  const json& operator[](const std::string& key) const;
};

// Throws std::runtime_error naming the offset of the first byte it cannot read.
json parse_json(std::string_view text);

}  // namespace corvid::schema
