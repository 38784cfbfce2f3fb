#pragma once
// The ring of consistent hashing with bounded load (Mirrokni, Thorup, Zadimoghaddam 2018):
// each endpoint owns `points_per_endpoint` points placed by xxHash of its instance id, so two
// clients that follow the same endpoints agree on every key, whatever order they learned
// them in. A key goes to the owner of the first point at or after its hash; the balancer
// walks on past owners that are ejected or already carry their bounded share.
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
  // hash_ring_test.cpp); ketama's 160 leave a 3-endpoint ring several percent off. 32 KiB of
  // ring per endpoint; a lookup is a binary search.
  static constexpr std::size_t points_per_endpoint = 2048;

  static std::uint64_t hash(std::string_view bytes) noexcept;
  // ids[i] is endpoint i's instance id.
  void build(const std::vector<std::string>& ids);
  bool empty() const noexcept { return points_.empty(); }

  // Endpoint indices in ring order from the key's hash, first match of `accept` wins; -1 if
  // it accepts none. An endpoint may be offered more than once (one per point).
  template <class Accept>
  std::ptrdiff_t find(std::uint64_t key_hash, Accept&& accept) const {
    if (points_.empty()) return -1;
    std::size_t i = first_at_or_after(key_hash);
    for (std::size_t n = 0; n < points_.size(); ++n) {
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
