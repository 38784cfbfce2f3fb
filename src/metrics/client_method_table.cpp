#include "client_method_table.hpp"

#include <string>

namespace corvid::metrics {

client_method_stats* client_method_table::insert(std::uint32_t id, std::string_view name) {
  if ((owned_.size() + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 8 : slots_.size() * 2);
  owned_.push_back(std::make_unique<client_method_stats>(id, std::string(name)));
  client_method_stats* s = owned_.back().get();
  std::size_t i = id & mask_;
  while (slots_[i] != nullptr) i = (i + 1) & mask_;
  slots_[i] = s;
  return s;
}

void client_method_table::rehash(std::size_t capacity) {
  slots_.assign(capacity, nullptr);
  mask_ = capacity - 1;
  for (const auto& s : owned_) {
    std::size_t i = s->id & mask_;
    while (slots_[i] != nullptr) i = (i + 1) & mask_;
    slots_[i] = s.get();
  }
}

}  // namespace corvid::metrics
