#include "server_presence.hpp"

#include <thread>
#include <unistd.h>

namespace corvid::discovery {

std::string advertised_address(const server_config& config, std::uint16_t port) {
  if (!config.advertise_address.empty()) return config.advertise_address;
  if (config.address.starts_with("unix:")) return config.address;
  std::string host = config.address;
  if (host == "0.0.0.0" || host == "::" || host.empty()) {
    char name[256] = {};
    host = ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
  } else if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";  // an IPv6 literal
  }
  return host + ":" + std::to_string(port);
}

rpc_error server_presence::check(const server_config& config) {
  if (config.registry.empty()) return {};
  auto url = parse_etcd_url(config.registry);
  if (!url) return std::move(url).error();
  if (config.registry_ttl < std::chrono::seconds(1)) {
    return {rpc_errc::invalid_argument, "registry_ttl must be at least 1 s"};
  }
  return {};
}

rpc_error server_presence::start(const server_config& config, std::uint16_t port,
                                 unsigned reactors) {
  if (config.registry.empty()) return {};
  registration_config rc;
  rc.url = config.registry;
  rc.instance_id = config.instance_id.empty() ? random_instance_id() : config.instance_id;
  rc.address = advertised_address(config, port);
  rc.ttl = config.registry_ttl;
  rc.weight = config.registry_weight;
  rc.reactors = reactors;
  auto r = registration::start(std::move(rc));
  if (!r) return std::move(r).error();
  std::lock_guard lk(mutex_);
  registration_ = std::move(*r);
  return {};
}

void server_presence::begin_stop(const server_config& config, bool followed) {
  registration* r;
  {
    std::lock_guard lk(mutex_);
    if (stopped_) return;
    stopped_ = true;
    r = registration_.get();
  }
  if (r != nullptr) r->deregister();
  // Balancers learn of the deletion through their etcd watch, and of draining through their
  // health watch, within milliseconds; calls they routed meanwhile are still answered.
  if (r != nullptr || followed) std::this_thread::sleep_for(config.drain_delay);
}

std::optional<registry_status> server_presence::registry() const {
  std::lock_guard lk(mutex_);
  if (!registration_) return std::nullopt;
  return registration_->status();
}

}  // namespace corvid::discovery
