#pragma once
// One service in three versions, as three builds of it would declare it. CORVID_SCHEMA_VERSION
// picks the version, the way a rolling deploy has each version in its own binary:
//   1: the first release.
//   2: appends fields to both structs (compatible with 1 both ways).
//   3: as 2, but `price` takes and returns 64-bit values (a breaking change).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#ifndef CORVID_SCHEMA_VERSION
#error "define CORVID_SCHEMA_VERSION"
#endif

namespace inventory {

struct query {
  std::string prefix;
#if CORVID_SCHEMA_VERSION >= 2
  std::uint32_t limit = 10;
#endif
};

struct item {
  std::uint32_t sku = 0;
  std::string name;
#if CORVID_SCHEMA_VERSION >= 2
  std::uint32_t stock = 7;
  std::optional<std::string> note = "v2 default";
#endif
};

std::vector<item> find(query q);

#if CORVID_SCHEMA_VERSION >= 3
std::uint64_t price(std::uint64_t sku);
#else
std::uint32_t price(std::uint32_t sku);
#endif

}  // namespace inventory
