#include "wire_util.hpp"

#include <fstream>
#include <sstream>

namespace corvid::protocol::test {

std::map<std::string, std::string> doc_vectors() {
  std::ifstream in(CORVID_PROTOCOL_DOC);
  if (!in) throw std::runtime_error("cannot open " CORVID_PROTOCOL_DOC);
  std::map<std::string, std::string> vectors;
  std::string line;
  std::string* current = nullptr;
  while (std::getline(in, line)) {
    if (current == nullptr) {
      if (line.starts_with("```hex ")) {
        auto [it, fresh] = vectors.try_emplace(line.substr(7));
        if (!fresh) throw std::runtime_error("duplicate vector " + it->first);
        current = &it->second;
      }
    } else if (line.starts_with("```")) {
      current = nullptr;
    } else {
      // Strict: every token before the commentary must be exactly two hex digits.
      const std::string bytes = line.substr(0, line.find("  "));
      std::istringstream tokens(bytes);
      for (std::string t; tokens >> t;) {
        if (t.size() != 2) throw std::runtime_error("bad hex token \"" + t + "\" in: " + line);
        *current += unhex(t);
      }
    }
  }
  if (current != nullptr) throw std::runtime_error("unterminated hex block");
  return vectors;
}

}  // namespace corvid::protocol::test
