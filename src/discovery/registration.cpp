#include "registration.hpp"

#include <cstdio>
#include <random>

#include "corvid/protocol/frame_header.hpp"

#include <nlohmann/json.hpp>

namespace corvid::discovery {

const char* to_string(registry_state s) noexcept {
  switch (s) {
    case registry_state::connecting:
      return "connecting";
    case registry_state::registered:
      return "registered";
    case registry_state::unreachable:
      return "unreachable";
    case registry_state::deregistered:
      return "deregistered";
  }
  return "unknown";
}

std::string describe_instance(const registration_config& c) {
  return nlohmann::json{{"id", c.instance_id},
                        {"address", c.address},
                        {"weight", c.weight},
                        {"reactors", c.reactors},
                        {"protocol", protocol::current_version}}
      .dump();
}

std::string random_instance_id() {
  std::random_device rd;
  const std::uint64_t v = (std::uint64_t{rd()} << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

expected<std::unique_ptr<registration>, rpc_error> registration::start(registration_config config) {
  auto url = parse_etcd_url(config.url);
  if (!url) return unexpected(std::move(url).error());
  if (config.ttl < std::chrono::seconds(1)) {
    return unexpected(rpc_error(rpc_errc::invalid_argument, "registry_ttl must be at least 1 s"));
  }
  std::unique_ptr<registration> r(new registration(std::move(config), std::move(*url)));
  r->worker_.start([p = r.get()](std::stop_token stop) { p->run(stop); });
  return r;
}

registration::registration(registration_config config, etcd_url url)
    : config_(std::move(config)),
      url_(std::move(url)),
      key_(url_.prefix + "/" + config_.instance_id),
      value_(describe_instance(config_)) {
  status_.registry = config_.url;
  status_.key = key_;
}

registration::~registration() { deregister(); }

registry_status registration::status() const {
  std::lock_guard lk(mutex_);
  return status_;
}

void registration::set_state(registry_state s, std::string error) {
  std::lock_guard lk(mutex_);
  if (!error.empty()) {
    ++status_.failures;
    status_.last_error = error;
  }
  if (s == status_.state) return;
  status_.state = s;
  // One line per change of state, not per retry.
  if (s == registry_state::registered) {
    std::fprintf(stderr, "corvid: registered %s at %s as %s\n", config_.address.c_str(),
                 config_.url.c_str(), key_.c_str());
  } else if (s == registry_state::unreachable) {
    std::fprintf(stderr, "corvid: registry %s unreachable, serving on and retrying: %s\n",
                 config_.url.c_str(), status_.last_error.c_str());
  }
}

void registration::run(const std::stop_token& stop) {
  // The stop token also aborts the request in progress.
  etcd_client etcd(url_.endpoint, std::chrono::milliseconds(2000), stop);
  const std::chrono::milliseconds initial_backoff(100), max_backoff(5000);
  auto backoff = initial_backoff;
  const auto interval =
      std::max<std::chrono::milliseconds>(config_.ttl / 3, std::chrono::milliseconds(200));
  std::int64_t lease = 0;
  auto failed = [&](const rpc_error& e) {
    if (stop.stop_requested()) return false;
    set_state(registry_state::unreachable, e.message());
    const bool go_on = worker_.sleep_for(stop, backoff);
    backoff = std::min(backoff * 2, max_backoff);
    return go_on;
  };
  while (!stop.stop_requested()) {
    if (lease == 0) {
      auto granted = etcd.grant(config_.ttl);
      if (!granted) {
        if (!failed(granted.error())) break;
        continue;
      }
      lease = *granted;
      {
        std::lock_guard lk(mutex_);
        lease_ = lease;
      }
      if (auto e = etcd.put(key_, value_, lease)) {
        // The lease may be fine; granting again is harmless (the old one expires).
        lease = 0;
        if (!failed(e)) break;
        continue;
      }
      {
        std::lock_guard lk(mutex_);
        ++status_.registered;
      }
      set_state(registry_state::registered);
      backoff = initial_backoff;
    }
    if (!worker_.sleep_for(stop, interval)) break;
    auto ttl = etcd.keep_alive(lease);
    if (!ttl) {
      // etcd answered but refused (e.g. a lease it no longer knows): register afresh.
      if (ttl.error().code() == rpc_errc::bad_request) lease = 0;
      if (!failed(ttl.error())) break;
      continue;  // keep the lease: it may outlive a short outage
    }
    if (*ttl == 0) {
      lease = 0;  // expired while etcd was out of reach (or was revoked): register again
      set_state(registry_state::connecting);
      continue;
    }
    set_state(registry_state::registered);
    backoff = initial_backoff;
  }
}

void registration::deregister() {
  {
    std::lock_guard lk(mutex_);
    if (deregistered_) return;
    deregistered_ = true;
  }
  worker_.stop();
  std::int64_t lease;
  {
    std::lock_guard lk(mutex_);
    lease = lease_;
  }
  // A fresh client: the thread's aborts every request once its stop token is stopped.
  etcd_client etcd(url_.endpoint, std::chrono::milliseconds(1000));
  rpc_error e = etcd.erase(key_);
  if (lease != 0) {
    if (auto r = etcd.revoke(lease); r && !e) e = std::move(r);
  }
  std::lock_guard lk(mutex_);
  status_.state = registry_state::deregistered;
  if (e) {
    ++status_.failures;
    status_.last_error = e.message();
    // The lease expires by itself within the TTL.
    std::fprintf(stderr,
                 "corvid: could not deregister from %s (the key expires with its lease): %s\n",
                 config_.url.c_str(), e.message().c_str());
  }
}

}  // namespace corvid::discovery
