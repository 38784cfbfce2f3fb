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

void hash_ring::extend_points(std::string_view id, std::size_t count,
                              std::vector<std::uint64_t>& positions) {
  std::string label;
  for (std::size_t p = positions.size(); p < count; ++p) {
    label = id;
    label += '#';
    label += std::to_string(p);
    positions.push_back(hash(label));
  }
}

void hash_ring::build(const std::vector<std::string>& ids) {
  std::vector<std::vector<std::uint64_t>> positions(ids.size());
  const std::size_t per_endpoint = points_for(ids.size());
  std::vector<const std::string*> id_ptrs;
  std::vector<const std::vector<std::uint64_t>*> position_ptrs;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    extend_points(ids[i], per_endpoint, positions[i]);
    id_ptrs.push_back(&ids[i]);
    position_ptrs.push_back(&positions[i]);
  }
  build(id_ptrs, position_ptrs);
}

void hash_ring::build(const std::vector<const std::string*>& ids,
                      const std::vector<const std::vector<std::uint64_t>*>& positions) {
  points_.clear();
  const std::size_t per_endpoint = points_for(ids.size());
  points_.reserve(ids.size() * per_endpoint);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& mine = *positions[i];
    for (std::size_t p = 0; p < per_endpoint && p < mine.size(); ++p) {
      points_.push_back({mine[p], static_cast<std::uint32_t>(i)});
    }
  }
  // Ties (vanishingly rare) break by id, so every client orders them alike.
  std::sort(points_.begin(), points_.end(), [&](const point& a, const point& b) {
    return a.position != b.position ? a.position < b.position : *ids[a.owner] < *ids[b.owner];
  });
}

std::size_t hash_ring::first_at_or_after(std::uint64_t h) const noexcept {
  auto it = std::lower_bound(points_.begin(), points_.end(), h,
                             [](const point& p, std::uint64_t v) { return p.position < v; });
  return it == points_.end() ? 0 : static_cast<std::size_t>(it - points_.begin());
}

}  // namespace corvid::detail
