#include "rdma_context.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

namespace corvid::rdma {
namespace {

// Page-aligned memory registered for local write (receives land in it, sends read it).
class pd_registrar final : public chunk_registrar {
 public:
  explicit pd_registrar(std::shared_ptr<device_context> dev) : dev_(std::move(dev)) {}
  registered_chunk register_chunk(std::size_t size) override {
    void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (p == nullptr) return {};
    auto mr = dev_->pd->reg_mr(p, size, verbs::access_local_write);
    if (!mr) {
      std::free(p);
      return {};
    }
    verbs::memory_region* region = mr->release();
    return {static_cast<char*>(p), region->lkey(), region};
  }
  void deregister_chunk(const registered_chunk& c) noexcept override {
    delete static_cast<verbs::memory_region*>(c.region);
    std::free(c.data);
  }

 private:
  std::shared_ptr<device_context> dev_;
};

using device_key = std::tuple<std::string, std::string, int, int>;
using pool_key = std::tuple<device_key, std::size_t, std::size_t, long long>;

struct registry {
  std::mutex mutex;
  std::map<device_key, std::weak_ptr<device_context>> devices;
  std::map<pool_key, std::weak_ptr<chunk_pool>> pools;
};
registry& the_registry() {
  static registry r;
  return r;
}

rpc_error check(const ibv_config& c) {
  auto bad = [](std::string what) {
    return rpc_error(rpc_errc::invalid_argument, std::move(what));
  };
  if (c.chunk_size < 4096 || c.chunk_size > (std::size_t{1} << 30))
    return bad("ibv_config::chunk_size must be between 4 KiB and 1 GiB");
  if (c.recv_buffers == 0) return bad("ibv_config::recv_buffers must be at least 1");
  if (c.send_window == 0) return bad("ibv_config::send_window must be at least 1");
  if (c.rnr_retry > 7) return bad("ibv_config::rnr_retry must be 0..7 (7 = retry forever)");
  if (c.min_rnr_timer > 31) return bad("ibv_config::min_rnr_timer must be 0..31");
  if (c.ack_timeout > 31) return bad("ibv_config::ack_timeout must be 0..31 (0 = wait forever)");
  if (c.retry_count > 7) return bad("ibv_config::retry_count must be 0..7");
  if (c.setup_timeout.count() <= 0) return bad("ibv_config::setup_timeout must be positive");
  if (c.max_connections_in_setup == 0 || c.max_connections_in_setup_per_peer == 0)
    return bad("ibv_config::max_connections_in_setup(_per_peer) must be at least 1");
  return {};
}

}  // namespace

expected<std::shared_ptr<rdma_context>, rpc_error> rdma_context::open(const ibv_config& config) {
  if (auto e = check(config)) return unexpected(std::move(e));
  ibv_config cfg = config;
  cfg.provider = verbs::resolve_provider(config.provider);
  registry& reg = the_registry();
  std::lock_guard lk(reg.mutex);
  const device_key dkey{cfg.provider, cfg.device_name, cfg.port, cfg.gid_index};
  std::shared_ptr<device_context> dev = reg.devices[dkey].lock();
  if (!dev) {
    auto opened = verbs::open_device({cfg.provider, cfg.device_name, cfg.port, cfg.gid_index});
    if (!opened) return unexpected(std::move(opened).error());
    auto pd = (*opened)->alloc_pd();
    if (!pd) return unexpected(std::move(pd).error());
    dev = std::make_shared<device_context>();
    dev->device = std::move(*opened);
    dev->pd = std::move(*pd);
    reg.devices[dkey] = dev;
  }
  const pool_key pkey{dkey, cfg.chunk_size, cfg.pool_watermark,
                      static_cast<long long>(cfg.idle_chunk_release.count())};
  std::shared_ptr<chunk_pool> pool = reg.pools[pkey].lock();
  if (!pool) {
    // The pool keeps the device alive through its registrar until its chunks are gone.
    pool = std::make_shared<chunk_pool>(std::make_unique<pd_registrar>(dev), cfg.chunk_size,
                                        cfg.pool_watermark, cfg.idle_chunk_release);
    reg.pools[pkey] = pool;
  }
  return std::make_shared<rdma_context>(std::move(cfg), std::move(dev), std::move(pool));
}

}  // namespace corvid::rdma
