#include "hash_ring.hpp"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace corvid::detail {

std::uint64_t hash_ring::hash(std::string_view bytes) noexcept {
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::size_t hash_ring::points_for(std::size_t endpoints) noexcept {
  std::size_t points = points_per_endpoint;
  while (points > min_points_per_endpoint && endpoints * points > max_points) points /= 2;
  return points;
}

void hash_ring::build(const std::vector<std::string>& ids) {
  points_.clear();
  const std::size_t per_endpoint = points_for(ids.size());
  points_.reserve(ids.size() * per_endpoint);
  std::string label;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    for (std::size_t p = 0; p < per_endpoint; ++p) {
      label = ids[i];
      label += '#';
      label += std::to_string(p);
      points_.push_back({hash(label), static_cast<std::uint32_t>(i)});
    }
  }
  // Ties (vanishingly rare) break by id, so every client orders them alike.
  std::sort(points_.begin(), points_.end(), [&](const point& a, const point& b) {
    return a.position != b.position ? a.position < b.position : ids[a.owner] < ids[b.owner];
  });
}

std::size_t hash_ring::first_at_or_after(std::uint64_t h) const noexcept {
  auto it = std::lower_bound(points_.begin(), points_.end(), h,
                             [](const point& p, std::uint64_t v) { return p.position < v; });
  return it == points_.end() ? 0 : static_cast<std::size_t>(it - points_.begin());
}

}  // namespace corvid::detail
