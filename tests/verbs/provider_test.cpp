// Provider selection: explicit name, $CORVID_VERBS_PROVIDER, unknown names, and the ibverbs
// provider's answer on a machine without an RDMA device.
#include <cstdlib>
#include <fstream>
#include <string>

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

// The GID table entry `index` of `device`'s port 1 as sysfs shows it ("" if absent).
std::string sysfs_gid(const std::string& device, int index) {
  std::ifstream in("/sys/class/infiniband/" + device + "/ports/1/gids/" + std::to_string(index));
  std::string gid;
  in >> gid;
  return gid;
}

// An empty GID entry (rxe has 1024, nearly all empty) must be refused at open, naming the
// index and the entries that work, not accepted to fail at connect as a "bad remote gid".
// Runs where an ibverbs device exists (the Soft-RoCE stage, scripts/test-rdma-kernel).
TEST(VerbsProvider, IbverbsEmptyGidIndexIsRefusedAtOpen) {
  const char* env_dev = std::getenv("CORVID_TEST_VERBS_DEVICE");
  auto dev = open_device(with("ibverbs", env_dev != nullptr ? env_dev : ""));
  if (!dev) GTEST_SKIP() << "no usable ibverbs device: " << dev.error().message();
  const std::string name = (*dev)->attr().name;
  const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000";
  int empty = -1;
  int valid = -1;
  for (int i = 0; i < 256; ++i) {
    const std::string g = sysfs_gid(name, i);
    if (g == zero && empty < 0) empty = i;
    if (!g.empty() && g != zero && valid < 0) valid = i;
  }
  if (empty < 0 || valid < 0) GTEST_SKIP() << name << " has no empty GID entry below 256";
  device_options o = with("ibverbs", name);
  o.gid_index = static_cast<std::uint8_t>(empty);
  auto bad = open_device(o);
  ASSERT_FALSE(bad) << "gid index " << empty << " (all zeros) was accepted";
  EXPECT_EQ(bad.error(), rpc_errc::invalid_argument);
  const std::string& m = bad.error().message();
  EXPECT_NE(m.find("gid index " + std::to_string(empty)), std::string::npos) << m;
  EXPECT_NE(m.find("valid indices: " + std::to_string(valid)), std::string::npos) << m;
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
