#include "wire_util.hpp"

#include <fstream>
#include <sstream>

namespace corvid::protocol::test {

std::string hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (i != 0) out += ' ';
    out += digits[b >> 4];
    out += digits[b & 0x0F];
  }
  return out;
}

std::string unhex(std::string_view text) {
  std::string out;
  int high = -1;
  for (const char c : text) {
    if (c == ' ' || c == '\n') continue;
    const int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0)
      throw std::invalid_argument("unhex: not a hex digit in \"" + std::string(text) + "\"");
    if (high < 0) {
      high = v;
    } else {
      out += static_cast<char>((high << 4) | v);
      high = -1;
    }
  }
  if (high >= 0)
    throw std::invalid_argument("unhex: odd digit count in \"" + std::string(text) + "\"");
  return out;
}

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
