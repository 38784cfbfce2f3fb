#pragma once
// What a load_balancer's calls read: one published set of endpoints. A view never changes
// once published; membership changes build a new one (its ring included) under the
// balancer's mutex, off the call path, and swap it in. Calls that loaded the old view keep
// it, and so its nodes and their pools, until they end.
#include <chrono>
#include <memory>
#include <vector>

#include "corvid/client/load_balancer.hpp"

#include "hash_ring.hpp"

namespace corvid {

struct load_balancer::view {
  std::vector<std::shared_ptr<node>> nodes;  // sorted by instance id
  detail::hash_ring ring;                    // consistent_hash only; owners index `nodes`
  // Nonzero: the last update removed every endpoint; these are kept until then.
  steady::time_point hold_until{};
};

}  // namespace corvid
