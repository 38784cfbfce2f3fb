// etcd://host:port/prefix: range the prefix, then watch it from the next revision. A broken
// watch resumes from the last revision seen, so no change is missed or applied twice; a
// compacted one ranges again. While etcd is out of reach nothing is handed over: the
// balancer keeps the endpoints it last knew.
#include <atomic>
#include <condition_variable>
#include <map>
#include <thread>

#include "endpoint_source.hpp"
#include "etcd_client.hpp"
#include <nlohmann/json.hpp>

namespace corvid::discovery {
namespace {

// A registered instance's value (registration.cpp, describe_instance); nothing if malformed.
std::optional<lb_endpoint> decode_instance(const etcd_kv& kv) {
  auto j = nlohmann::json::parse(kv.value, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto address = j.find("address");
  if (address == j.end() || !address->is_string()) return std::nullopt;
  lb_endpoint e;
  e.address = address->get<std::string>();
  e.id = j.value("id", kv.key);
  auto w = j.find("weight");
  if (w != j.end() && w->is_number_unsigned()) e.weight = std::max(1u, w->get<unsigned>());
  return e;
}

class etcd_source final : public endpoint_source {
 public:
  etcd_source(etcd_url url, endpoints_callback cb, etcd_range first)
      : url_(std::move(url)), cb_(std::move(cb)) {
    apply_range(first);
    thread_ = std::thread([this] { run(); });
  }
  ~etcd_source() override {
    {
      std::lock_guard lk(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void apply_range(const etcd_range& r) {
    keys_.clear();
    for (const auto& kv : r.kvs) {
      if (auto e = decode_instance(kv)) keys_[kv.key] = std::move(*e);
    }
    revision_ = r.revision;
    publish();
  }
  void publish() {
    std::vector<lb_endpoint> list;
    list.reserve(keys_.size());
    for (const auto& [key, e] : keys_) list.push_back(e);
    cb_(std::move(list));
  }
  bool wait(std::chrono::milliseconds d) {
    std::unique_lock lk(mutex_);
    return !cv_.wait_for(lk, d, [&] { return stop_.load(); });
  }

  void run() {
    etcd_client etcd(url_.endpoint, std::chrono::milliseconds(2000), &stop_);
    const std::chrono::milliseconds initial(100), max_backoff(2000);
    auto backoff = initial;
    bool need_range = false;
    while (!stop_) {
      if (need_range) {
        auto r = etcd.range_prefix(url_.prefix);
        if (!r) {
          if (!wait(backoff)) break;
          backoff = std::min(backoff * 2, max_backoff);
          continue;
        }
        apply_range(*r);
        need_range = false;
      }
      const watch_end end = etcd.watch_prefix(
          url_.prefix, revision_ + 1,
          [&](const std::vector<etcd_event>& events, std::int64_t revision) {
            for (const auto& ev : events) {
              if (ev.deleted) {
                keys_.erase(ev.kv.key);
              } else if (auto e = decode_instance(ev.kv)) {
                keys_[ev.kv.key] = std::move(*e);
              }
            }
            revision_ = std::max(revision_, revision);
            publish();
          },
          [&] { backoff = initial; });
      if (end == watch_end::stopped) break;
      if (end == watch_end::compacted) {
        need_range = true;
        continue;
      }
      // Broken (etcd restarted, or out of reach): resume from the last revision seen.
      if (!wait(backoff)) break;
      backoff = std::min(backoff * 2, max_backoff);
    }
  }

  const etcd_url url_;
  endpoints_callback cb_;
  std::map<std::string, lb_endpoint> keys_;  // by key; only the thread touches it after start
  std::int64_t revision_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace

expected<std::unique_ptr<endpoint_source>, rpc_error> open_etcd_source(std::string_view url,
                                                                       const lb_config&,
                                                                       endpoints_callback cb) {
  auto parsed = parse_etcd_url(url);
  if (!parsed) return unexpected(std::move(parsed).error());
  // The prefix's own keys: "<prefix>/" so that /services/echo does not match /services/echo2.
  parsed->prefix += '/';
  etcd_client etcd(parsed->endpoint, std::chrono::milliseconds(2000));
  auto first = etcd.range_prefix(parsed->prefix);
  if (!first) return unexpected(std::move(first).error());
  return std::unique_ptr<endpoint_source>(
      std::make_unique<etcd_source>(std::move(*parsed), std::move(cb), std::move(*first)));
}

}  // namespace corvid::discovery
