#pragma once
// The discovery tests' servers: each answers whoami() with its own name, and hold(ms) keeps
// a call in flight for `ms` while counting how many it holds at once.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "eventually.hpp"
#include "slowdown.hpp"

namespace discovery_test {

using namespace std::chrono_literals;

struct identity {
  std::string name;
  std::atomic<int> holding{0}, max_holding{0};
  std::string whoami() const { return name; }
  corvid::task<std::string> hold(int ms) {
    const int now = ++holding;
    int seen = max_holding.load();
    while (now > seen && !max_holding.compare_exchange_weak(seen, now)) {
    }
    co_await corvid::sleep_for(std::chrono::milliseconds(ms));
    --holding;
    co_return name;
  }
};

inline corvid::server_config server_config(std::string registry = {}) {
  corvid::server_config c;
  c.address = "127.0.0.1";
  c.io_threads = 1;
  c.registry = std::move(registry);
  c.registry_ttl = std::chrono::seconds(2);
  c.drain_delay = 300ms;
  return c;
}

// A started server named `name` (registered when cfg.registry is set).
class named_server {
 public:
  named_server(std::string name, corvid::server_config cfg = server_config())
      : id_{std::move(name)}, server_(std::move(cfg)) {
    server_.register_handler<&identity::whoami, &identity::hold>(&id_);
    if (auto e = server_.async_start()) throw std::runtime_error(e.message());
  }
  corvid::rpc_server& server() { return server_; }
  identity& id() { return id_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }

 private:
  identity id_;
  corvid::rpc_server server_;
};

// The balancer's current endpoint addresses, sorted.
inline std::vector<std::string> addresses(const corvid::load_balancer& lb) {
  std::vector<std::string> out;
  for (const auto& e : lb.endpoints()) out.push_back(e.address);
  std::sort(out.begin(), out.end());
  return out;
}

inline std::shared_ptr<corvid::load_balancer> open_balancer(const std::string& url,
                                                            corvid::lb_config cfg = {}) {
  auto lb = corvid::sync_wait(corvid::load_balancer::open(url, cfg));
  if (!lb) throw std::runtime_error("open(" + url + "): " + lb.error().message());
  return *lb;
}

// What the balancer's stats say of `address` (a default one if it does not follow it).
inline corvid::lb_endpoint_stats stats_of(const corvid::load_balancer& lb,
                                          const std::string& address) {
  for (auto& s : lb.stats()) {
    if (s.address == address) return s;
  }
  return {};
}

// Calls whoami() through the balancer, one after another on a thread of its own, until
// stopped; counts who answered and what failed.
class caller {
 public:
  explicit caller(corvid::load_balancer& lb, std::string key = {}) : lb_(lb), key_(std::move(key)) {
    thread_ = std::thread([this] {
      corvid::sync_wait([this]() -> corvid::task<void> {
        corvid::call_options o;
        o.hash_key = key_;
        while (!stop_) {
          auto r = co_await lb_.call_with<&identity::whoami>(o);
          std::lock_guard lk(mutex_);
          if (r) {
            ++answered_[r->value];
          } else {
            ++failed_;
            if (r.error().request_unsent() || r.error().code() == corvid::rpc_errc::connect_failed)
              ++retryable_failed_;
            last_error_ = r.error().message();
          }
        }
      }());
    });
  }
  ~caller() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::map<std::string, int> answered() {
    std::lock_guard lk(mutex_);
    return answered_;
  }
  int answered_by(const std::string& name) {
    std::lock_guard lk(mutex_);
    return answered_[name];
  }
  int failed() {
    std::lock_guard lk(mutex_);
    return failed_;
  }
  int retryable_failed() {
    std::lock_guard lk(mutex_);
    return retryable_failed_;
  }
  std::string last_error() {
    std::lock_guard lk(mutex_);
    return last_error_;
  }

 private:
  corvid::load_balancer& lb_;
  std::string key_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::map<std::string, int> answered_;
  int failed_ = 0, retryable_failed_ = 0;
  std::string last_error_;
  std::thread thread_;
};

// Which server answers whoami() through the balancer, `n` times (failures as "!<errc>").
inline std::map<std::string, int> spread(corvid::load_balancer& lb, int n,
                                         std::string_view key = {}) {
  return corvid::sync_wait([&]() -> corvid::task<std::map<std::string, int>> {
    std::map<std::string, int> seen;
    corvid::call_options o;
    o.hash_key = key;
    for (int i = 0; i < n; ++i) {
      auto r = co_await lb.call_with<&identity::whoami>(o);
      ++seen[r ? r->value : "!" + std::string(corvid::to_string(r.error().code()))];
    }
    co_return seen;
  }());
}

}  // namespace discovery_test
