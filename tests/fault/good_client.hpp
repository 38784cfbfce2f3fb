#pragma once
// The well-behaved client of the hostile-client tests and the attack bench: one rpc_client on
// its own thread making echo calls back to back (each with a deadline), recording every
// latency and every failure, until stopped.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <corvid/corvid.hpp>

namespace corvid_attack {

template <auto Echo>
class good_client {
 public:
  // Each call's deadline is `deadline`: past it, the call counts as a failure.
  explicit good_client(std::string endpoint, std::size_t payload = 64,
                       std::chrono::milliseconds pause = std::chrono::milliseconds(0),
                       std::chrono::milliseconds deadline = std::chrono::seconds(2))
      : payload_(payload, 'g'), pause_(pause), deadline_(deadline) {
    thread_ = std::thread([this, ep = std::move(endpoint)] { run(ep); });
  }
  ~good_client() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t ok() const { return ok_.load(); }
  std::uint64_t failed() const { return failed_.load(); }
  std::string first_error() const {
    std::lock_guard lock(mutex_);
    return first_error_;
  }
  // Latencies (microseconds) recorded since the last take().
  std::vector<double> take_latencies() {
    std::lock_guard lock(mutex_);
    return std::exchange(latencies_us_, {});
  }
  // Blocks until `n` more calls succeeded (or `limit` passed); true if they did.
  bool wait_for_calls(std::uint64_t n, std::chrono::milliseconds limit) {
    const auto target = ok_.load() + n;
    const auto until = std::chrono::steady_clock::now() + limit;
    while (ok_.load() < target && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return ok_.load() >= target;
  }

 private:
  void run(const std::string& endpoint) {
    corvid::rpc_client client;
    if (auto ec = corvid::sync_wait(connect(client, endpoint))) {
      fail(ec.message());
      return;
    }
    while (!stop_.load()) {
      const auto begin = std::chrono::steady_clock::now();
      auto r = corvid::sync_wait(call(client));
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin)
              .count();
      if (r && *r == payload_) {
        ++ok_;
        std::lock_guard lock(mutex_);
        latencies_us_.push_back(us);
      } else {
        fail(r ? std::string("wrong reply") : r.error().message());
      }
      if (pause_.count() > 0) std::this_thread::sleep_for(pause_);
    }
  }
  corvid::task<corvid::rpc_error> connect(corvid::rpc_client& c, std::string ep) {
    co_return co_await c.connect(ep);
  }
  corvid::task<corvid::expected<std::string, corvid::rpc_error>> call(corvid::rpc_client& c) {
    co_return co_await c.call_for<Echo>(deadline_, std::string_view(payload_));
  }
  void fail(std::string what) {
    ++failed_;
    std::lock_guard lock(mutex_);
    if (first_error_.empty()) first_error_ = std::move(what);
  }

  const std::string payload_;
  const std::chrono::milliseconds pause_;
  const std::chrono::milliseconds deadline_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> ok_{0}, failed_{0};
  mutable std::mutex mutex_;
  std::vector<double> latencies_us_;
  std::string first_error_;
  std::thread thread_;
};

// The p-th percentile (0..100) of `v` (sorts it).
inline double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace corvid_attack
