#include "corvid/memory/memory_usage.hpp"

namespace corvid {

const memory_usage* memory_usage::find(std::string_view path) const noexcept {
  const memory_usage* node = this;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    const memory_usage* next = nullptr;
    for (const auto& c : node->children) {
      if (c.name == part) {
        next = &c;
        break;
      }
    }
    if (next == nullptr) return nullptr;
    node = next;
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return node;
}

namespace {
void append(std::string& out, const memory_usage& u, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
  out += u.name;
  out += ": current " + std::to_string(u.current) + " peak " + std::to_string(u.peak);
  if (u.limit != unlimited_memory) out += " limit " + std::to_string(u.limit);
  out += '\n';
  for (const auto& c : u.children) append(out, c, depth + 1);
}
}  // namespace

std::string memory_usage::to_string() const {
  std::string out;
  append(out, *this, 0);
  return out;
}

}  // namespace corvid
