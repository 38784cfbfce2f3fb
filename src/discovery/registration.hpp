#pragma once
// A server's entry in etcd (server_config::registry): a lease with the TTL, the key
// <prefix>/<instance id> bound to it, and a thread that keeps the lease alive. An unreachable
// registry never stops the server: the thread retries with back-off and says so in status(),
// on /status, /metrics and in one log line per change of state.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

#include "corvid/error.hpp"
#include "corvid/expected.hpp"

#include "etcd_client.hpp"
#include "stoppable_worker.hpp"

namespace corvid::discovery {

enum class registry_state { connecting, registered, unreachable, deregistered };
const char* to_string(registry_state s) noexcept;

struct registry_status {
  std::string registry;  // the URL
  std::string key;       // <prefix>/<instance id>
  registry_state state = registry_state::connecting;
  std::string last_error;        // the last failure to reach the registry; empty = none yet
  std::uint64_t failures = 0;    // requests to the registry that failed
  std::uint64_t registered = 0;  // times the key was (re)written under a fresh lease
};

struct registration_config {
  std::string url;  // etcd://host:port/prefix
  std::string instance_id;
  std::string address;  // what clients dial
  std::chrono::seconds ttl{10};
  unsigned weight = 1;
  unsigned reactors = 1;
};

// The JSON value stored under the key (read back by the balancer's etcd source).
std::string describe_instance(const registration_config& c);

class registration {
 public:
  // Fails only on a malformed URL; an unreachable registry is retried in the background.
  static expected<std::unique_ptr<registration>, rpc_error> start(registration_config config);
  ~registration();  // deregister()
  // Stops keeping the lease alive, deletes the key and revokes the lease (each bounded by
  // a short timeout). Idempotent.
  void deregister();
  registry_status status() const;

 private:
  registration(registration_config config, etcd_url url);
  void run(const std::stop_token& stop);
  void set_state(registry_state s, std::string error = {});

  const registration_config config_;
  const etcd_url url_;
  const std::string key_;
  const std::string value_;
  mutable std::mutex mutex_;
  registry_status status_;
  std::int64_t lease_ = 0;  // under mutex_
  bool deregistered_ = false;
  stoppable_worker worker_;  // last: its thread goes before what it uses
};

// 16 random hex digits: a new server's instance id (its place on balancers' hash rings).
std::string random_instance_id();

}  // namespace corvid::discovery
