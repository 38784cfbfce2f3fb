// Prints the examples' schema (corvid::describe_schema). Checked in CI against the committed
// examples/echo_api.schema.json with `corvid-schema check`, so a breaking change to
// echo_api.hpp fails the build until the committed schema is updated on purpose.
#include <cstdio>

#include <corvid/schema/describe_schema.hpp>

#include "echo_api.hpp"

int main() {
  std::fputs(corvid::describe_schema<echo, add, move>().c_str(), stdout);
  return 0;
}
