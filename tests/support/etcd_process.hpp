#pragma once
// A real etcd (Debian's etcd-server) for one test: its own temporary data directory and
// ports, started and stopped by the test; restart() keeps the data (leases, keys, revision).
// Readiness is asked through corvid's own etcd client (src/discovery/etcd_client.hpp).
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "child_process.hpp"
#include "discovery/etcd_client.hpp"
#include "free_port.hpp"
#include "slowdown.hpp"

namespace corvid::test {

class etcd_process {
 public:
  etcd_process() {
    char dir[] = "/tmp/corvid-etcd-XXXXXX";
    if (::mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = dir;
    // A port may be taken between choosing and binding it: choose again, on fresh data.
    for (int attempt = 0;; ++attempt) {
      client_port_ = free_port();
      peer_port_ = free_port();
      std::error_code ignored;
      std::filesystem::remove_all(dir_ + "/data", ignored);
      if (try_start()) break;
      if (attempt == 4) throw std::runtime_error("etcd did not start: " + process_->log());
    }
  }
  ~etcd_process() {
    process_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  // "etcd://127.0.0.1:<port><prefix>"
  std::string url(const std::string& prefix) const { return "etcd://" + endpoint() + prefix; }

  // SIGKILL (no goodbye to clients), or SIGTERM.
  void kill(int sig = SIGKILL) {
    if (process_) process_->stop(sig);
  }
  // Starts it again on the same ports and data (after kill()).
  void start() {
    if (!try_start()) throw std::runtime_error("etcd did not start again: " + process_->log());
  }
  std::string log() const { return process_ ? process_->log() : std::string(); }

 private:
  bool try_start() {
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    const std::string client = "http://" + endpoint();
    process_ = std::make_unique<child_process>(
        "/usr/bin/etcd",
        std::vector<std::string>{"--name", "corvid-test", "--data-dir", dir_ + "/data",
                                 "--listen-client-urls", client, "--advertise-client-urls", client,
                                 "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                 "--initial-cluster", "corvid-test=" + peer, "--log-level", "warn"},
        dir_ + "/etcd.log");
    return wait_ready();
  }
  // False if etcd exited (e.g. a port was taken); throws if it never became ready.
  bool wait_ready() {
    discovery::etcd_client c(endpoint(), std::chrono::milliseconds(500));
    const auto until = std::chrono::steady_clock::now() + patience(std::chrono::seconds(20));
    while (std::chrono::steady_clock::now() < until) {
      if (c.range_prefix("/corvid-ready-check")) return true;
      if (!process_->running()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("etcd did not become ready: " + process_->log());
  }

  std::string dir_;
  std::uint16_t client_port_ = 0, peer_port_ = 0;
  std::unique_ptr<child_process> process_;
};

}  // namespace corvid::test
