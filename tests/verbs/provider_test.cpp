// Provider selection: explicit name, $CORVID_VERBS_PROVIDER, unknown names, and the ibverbs
// provider's answer on a machine without an RDMA device.
#include <cstdlib>

#include <gtest/gtest.h>

#include "verbs/verbs.hpp"

namespace corvid::verbs {
namespace {

device_options with(std::string provider, std::string name = {}, std::uint8_t port = 1) {
  device_options o;
  o.provider = std::move(provider);
  o.device_name = std::move(name);
  o.port = port;
  return o;
}

struct env_guard {
  explicit env_guard(const char* value) {
    if (const char* old = std::getenv("CORVID_VERBS_PROVIDER")) saved = old;
    if (value != nullptr) {
      ::setenv("CORVID_VERBS_PROVIDER", value, 1);
    } else {
      ::unsetenv("CORVID_VERBS_PROVIDER");
    }
  }
  ~env_guard() {
    if (saved) {
      ::setenv("CORVID_VERBS_PROVIDER", saved->c_str(), 1);
    } else {
      ::unsetenv("CORVID_VERBS_PROVIDER");
    }
  }
  std::optional<std::string> saved;
};

TEST(VerbsProvider, SoftByName) {
  auto dev = open_device(with("soft"));
  ASSERT_TRUE(dev) << dev.error().message();
  EXPECT_EQ((*dev)->attr().provider, "soft");
  EXPECT_EQ((*dev)->attr().name, "softverbs0");
  EXPECT_GT((*dev)->attr().max_inline_data, 0u);
}

TEST(VerbsProvider, EnvironmentSelectsSoft) {
  env_guard env("soft");
  EXPECT_EQ(resolve_provider(""), "soft");
  auto dev = open_device({});
  ASSERT_TRUE(dev) << dev.error().message();
  EXPECT_EQ((*dev)->attr().provider, "soft");
}

TEST(VerbsProvider, ExplicitNameBeatsEnvironment) {
  env_guard env("soft");
  EXPECT_EQ(resolve_provider("ibverbs"), "ibverbs");
}

TEST(VerbsProvider, DefaultIsIbverbs) {
  env_guard env(nullptr);
  EXPECT_EQ(resolve_provider(""), "ibverbs");
}

TEST(VerbsProvider, UnknownProviderIsInvalid) {
  auto dev = open_device(with("rxe"));
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error(), rpc_errc::invalid_argument);
  EXPECT_NE(dev.error().message().find("rxe"), std::string::npos);
}

TEST(VerbsProvider, SoftHasOneDevice) {
  auto dev = open_device(with("soft", "mlx5_0"));
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error(), rpc_errc::no_rdma_device);
  auto port = open_device(with("soft", "", 2));
  ASSERT_FALSE(port);
  EXPECT_EQ(port.error(), rpc_errc::invalid_argument);
}

// This machine's kernel has no RDMA at all: ibverbs must say so, never crash or fall back.
TEST(VerbsProvider, IbverbsWithoutDeviceIsNoRdmaDevice) {
  env_guard env("soft");  // must not leak into an explicit "ibverbs"
  auto dev = open_device(with("ibverbs"));
  if (dev) GTEST_SKIP() << "this host has an RDMA device: " << (*dev)->attr().name;
  EXPECT_EQ(dev.error(), rpc_errc::no_rdma_device) << dev.error().message();
  EXPECT_NE(dev.error().message().find("ibverbs"), std::string::npos);
}

TEST(VerbsProvider, IbverbsUnknownDeviceName) {
  auto dev = open_device(with("ibverbs", "no_such_hca"));
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error(), rpc_errc::no_rdma_device);
}

TEST(VerbsProvider, RnrTimerEncoding) {
  EXPECT_EQ(rnr_timer_us(0), 655360u);
  EXPECT_EQ(rnr_timer_us(1), 10u);
  EXPECT_EQ(rnr_timer_us(12), 640u);
  EXPECT_EQ(rnr_timer_us(31), 491520u);
}

}  // namespace
}  // namespace corvid::verbs
