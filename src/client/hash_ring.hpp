#pragma once
// The ring of consistent hashing with bounded load (Mirrokni, Thorup, Zadimoghaddam 2018):
// each endpoint owns `points_per_endpoint` points placed by xxHash of its instance id, so two
// clients that follow the same endpoints agree on every key, whatever order they learned
// them in. A key goes to the owner of the first point at or after its hash; the balancer
// walks on past owners that are ejected or already carry their bounded share.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corvid::detail {

class hash_ring {
 public:
  // Enough points that an endpoint's share is within about half a percent of 1/N even for
  // small N, so removing one of N moves at most 1/N + 2 % of the keys (tests/discovery/
  // hash_ring_test.cpp); ketama's 160 leave a 3-endpoint ring several percent off. A lookup
  // is a binary search.
  static constexpr std::size_t points_per_endpoint = 2048;
  // The ring holds at most this many points (16 bytes each: 4 MiB): past 128 endpoints each
  // gets fewer, halving at each power of two (1,024 up to 256 endpoints, ..., 32 from 8,192),
  // where many endpoints already average out. Every client following the same endpoints
  // picks the same count, so they still agree on every key; crossing a step moves about
  // half of the keys once.
  static constexpr std::size_t max_points = std::size_t{1} << 18;
  static constexpr std::size_t min_points_per_endpoint = 32;
  static std::size_t points_for(std::size_t endpoints) noexcept;

  static std::uint64_t hash(std::string_view bytes) noexcept;
  // ids[i] is endpoint i's instance id.
  void build(const std::vector<std::string>& ids);
  // The same from positions computed before (extend_points, kept per endpoint so a rebuild
  // hashes only the endpoints that are new): the first points_for(ids.size()) of each.
  void build(const std::vector<const std::string*>& ids,
             const std::vector<const std::vector<std::uint64_t>*>& positions);
  // Appends `id`'s point positions up to `count` in all (those already there are kept).
  static void extend_points(std::string_view id, std::size_t count,
                            std::vector<std::uint64_t>& positions);
  bool empty() const noexcept { return points_.empty(); }
  std::size_t size() const noexcept { return points_.size(); }

  // Endpoint indices in ring order from the key's hash, first match of `accept` wins; -1 if
  // it accepts none. An endpoint may be offered more than once (one per point).
  // At most `max_steps` points are offered (a ring of many endpoints, most of them refused,
  // would otherwise be walked a long way per key).
  template <class Accept>
  std::ptrdiff_t find(std::uint64_t key_hash, Accept&& accept,
                      std::size_t max_steps = SIZE_MAX) const {
    if (points_.empty()) return -1;
    std::size_t i = first_at_or_after(key_hash);
    const std::size_t steps = std::min(max_steps, points_.size());
    for (std::size_t n = 0; n < steps; ++n) {
      const std::uint32_t owner = points_[i].owner;
      if (accept(static_cast<std::size_t>(owner))) return owner;
      if (++i == points_.size()) i = 0;
    }
    return -1;
  }
  // The owner of the key with no load bound (the ring alone).
  std::ptrdiff_t owner(std::uint64_t key_hash) const {
    return find(key_hash, [](std::size_t) { return true; });
  }

 private:
  struct point {
    std::uint64_t position;
    std::uint32_t owner;
  };
  std::size_t first_at_or_after(std::uint64_t h) const noexcept;
  std::vector<point> points_;  // sorted by position
};

}  // namespace corvid::detail
