// corvid-schema check OLD.json NEW.json: compares two schemas written by
// corvid::describe_schema and exits 1 if the change breaks peers of either version (a
// function removed or its parameters or result changed; a struct field removed, reordered or
// retyped), explaining each finding; 0 if the versions stay compatible; 2 on bad input.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "check.hpp"
#include "json.hpp"

namespace {

corvid::schema::json load(const char* path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("cannot read ") + path);
  std::stringstream text;
  text << in.rdbuf();
  return corvid::schema::parse_json(text.str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || std::string(argv[1]) != "check") {
    std::fprintf(stderr, "usage: corvid-schema check OLD.json NEW.json\n");
    return 2;
  }
  try {
    const auto findings = corvid::schema::check(load(argv[2]), load(argv[3]));
    bool breaking = false;
    for (const auto& f : findings) {
      std::printf("%s: %s\n", f.breaking ? "breaking" : "ok", f.what.c_str());
      breaking = breaking || f.breaking;
    }
    std::printf("%s\n",
                breaking ? "incompatible: peers built from the two schemas break" : "compatible");
    return breaking ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corvid-schema: %s\n", e.what());
    return 2;
  }
}
