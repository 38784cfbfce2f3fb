#pragma once
// What a server shows the world beyond its port with server_config::registry: its
// registration in etcd. rpc_server's start() and stop() drive it: stop() turns health to
// draining and deregisters *before* connections drain, so balancers stop routing to the
// server while it still answers.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "corvid/server/server_config.hpp"

#include "registration.hpp"

namespace corvid::discovery {

class server_presence {
 public:
  // Checks the registry settings (before the server binds): a malformed URL is a start error.
  static rpc_error check(const server_config& config);
  // After the bind: registers in the background (an unreachable registry never fails this).
  rpc_error start(const server_config& config, std::uint16_t port, unsigned reactors);
  // After health went to draining: the registration is deleted and its lease revoked; then,
  // with a registry or when `followed` (a health watch was open), waits server_config::
  // drain_delay for balancers to notice. Idempotent.
  void begin_stop(const server_config& config, bool followed);
  std::optional<registry_status> registry() const;

 private:
  mutable std::mutex mutex_;
  std::unique_ptr<registration> registration_;
  bool stopped_ = false;
};

// The address clients should dial: advertise_address, or the listen address and port (the
// host's name for a wildcard address).
std::string advertised_address(const server_config& config, std::uint16_t port);

}  // namespace corvid::discovery
