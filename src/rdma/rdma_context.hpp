#pragma once
// What init_ibv() opens: the verbs device with its protection domain, shared by every
// endpoint of the process that names the same provider, device, port and GID index, and a
// chunk pool on it, shared by every endpoint configured with the same chunk size, watermark
// and idle time: memory registration is per device and costly, so it is done once and shared.
#include <memory>
#include <string>

#include "corvid/error.hpp"
#include "corvid/expected.hpp"
#include "corvid/rdma/ibv_config.hpp"

#include "../admission/shared_slots.hpp"
#include "../verbs/verbs.hpp"
#include "chunk_pool.hpp"

namespace corvid::rdma {

// A device and its protection domain. Destroyed when the last endpoint using it goes.
struct device_context {
  std::unique_ptr<verbs::device> device;
  std::unique_ptr<verbs::protection_domain> pd;
  ~device_context() { pd.reset(); }  // before the device
};

class rdma_context {
 public:
  // Opens (or finds) the device and pool for `config`. Errors: no_rdma_device when the
  // provider has no device, invalid_argument for a config that cannot work.
  static expected<std::shared_ptr<rdma_context>, rpc_error> open(const ibv_config& config);

  rdma_context(ibv_config config, std::shared_ptr<device_context> dev,
               std::shared_ptr<chunk_pool> pool)
      : config_(std::move(config)),
        device_(std::move(dev)),
        pool_(std::move(pool)),
        setups_(detail::shared_slots::make(config_.max_connections_in_setup,
                                           config_.max_connections_in_setup_per_peer)) {}

  const ibv_config& config() const noexcept { return config_; }
  verbs::device& device() const noexcept { return *device_->device; }
  verbs::protection_domain& pd() const noexcept { return *device_->pd; }
  chunk_pool& pool() const noexcept { return *pool_; }
  // For timers that trim the pool later: they hold it weakly.
  std::weak_ptr<chunk_pool> weak_pool() const noexcept { return pool_; }
  const std::string& provider() const noexcept { return device().attr().provider; }
  // Connections of this endpoint (one init_ibv) in setup, against the config's limits.
  detail::shared_slots& setups() const noexcept { return *setups_; }

 private:
  ibv_config config_;
  std::shared_ptr<device_context> device_;  // outlives the pool's registrations
  std::shared_ptr<chunk_pool> pool_;
  std::shared_ptr<detail::shared_slots> setups_;
};

}  // namespace corvid::rdma
