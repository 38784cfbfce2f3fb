#pragma once
// Compares two schemas from describe_schema: what changed, and whether peers built from the
// old one still work with peers built from the new one (and the other way round).
#include <string>
#include <vector>

#include "json.hpp"

namespace corvid::schema {

struct finding {
  bool breaking;
  std::string what;
};

// Every difference between old_schema and new_schema that matters on the wire.
std::vector<finding> check(const json& old_schema, const json& new_schema);

}  // namespace corvid::schema
