#pragma once
// A client connection's method stats by function id: an open-addressing table probed under
// the connection's lock on every call (the id is already a hash, so a mask finds its slot).
// Only that lock's holder changes it, and only while also holding the registry's mutex
// (`insert`), which a scrape holds while it reads: lookups need no lock of their own.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "client_method_stats.hpp"

namespace corvid::metrics {

class client_method_table {
 public:
  client_method_stats* find(std::uint32_t id) const noexcept {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = id & mask_;; i = (i + 1) & mask_) {
      client_method_stats* s = slots_[i];
      if (s == nullptr || s->id == id) return s;
    }
  }
  // A method's first call on this connection: creates its stats. Under the registry's mutex.
  client_method_stats* insert(std::uint32_t id, std::string_view name);

  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const auto& s : owned_) fn(*s);
  }

 private:
  void rehash(std::size_t capacity);
  std::vector<client_method_stats*> slots_;  // power-of-two size, at most half full
  std::size_t mask_ = 0;
  std::vector<std::unique_ptr<client_method_stats>> owned_;
};

}  // namespace corvid::metrics
