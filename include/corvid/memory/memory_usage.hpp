#pragma once
// A snapshot of a memory_tracker subtree: what server.memory() and client.memory() return.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "corvid/export.hpp"
#include "corvid/memory/memory_limit.hpp"

namespace corvid {

struct CORVID_API memory_usage {
  std::string name;
  std::size_t current = 0;  // bytes charged now
  std::size_t peak = 0;     // highest `current` since creation (or reset_peak())
  std::size_t limit = unlimited_memory;
  std::vector<memory_usage> children;

  // The descendant at a '/'-separated path of names ("in_flight/conn 1"), or null.
  const memory_usage* find(std::string_view path) const noexcept;
  // Indented text, one node per line (for logs and the benchmark).
  std::string to_string() const;
};

}  // namespace corvid
