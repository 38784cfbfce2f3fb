#pragma once
// The verbs provider the RDMA tests run on. softverbs by default, so they run anywhere; on a
// host with an RDMA NIC the same tests run on it with
//
//   CORVID_TEST_VERBS_PROVIDER=ibverbs [CORVID_TEST_VERBS_DEVICE=mlx5_0]
//   [CORVID_TEST_VERBS_PORT=1] [CORVID_TEST_VERBS_GID_INDEX=3] ctest -R 'rdma|examples.rdma'
//
// (docs/softverbs.md, "Running the RDMA tests on a NIC").
#include <cstdint>
#include <cstdlib>
#include <string>

#include <corvid/rdma/ibv_config.hpp>

namespace corvid_rdma_test {

inline std::string test_env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// `c` with the provider, device, port and GID index the tests were asked to run on.
inline corvid::ibv_config test_ibv(corvid::ibv_config c = {}) {
  c.provider = test_env("CORVID_TEST_VERBS_PROVIDER", "soft");
  c.device_name = test_env("CORVID_TEST_VERBS_DEVICE", "");
  c.port = static_cast<std::uint8_t>(std::stoul(test_env("CORVID_TEST_VERBS_PORT", "1")));
  c.gid_index = static_cast<std::uint8_t>(std::stoul(test_env("CORVID_TEST_VERBS_GID_INDEX", "0")));
  return c;
}

}  // namespace corvid_rdma_test
