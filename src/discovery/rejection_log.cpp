#include "rejection_log.hpp"

#include <cstdio>

namespace corvid::detail {

// client_metrics keeps its registry private; the endpoint sources count into it.
struct discovery_metrics_access {
  static metrics::client_registry* registry(const std::shared_ptr<client_metrics>& m) noexcept {
    return m ? m->registry_.get() : nullptr;
  }
};

}  // namespace corvid::detail

namespace corvid::discovery {
namespace {

// A key is outside input too: printable and short in the log.
std::string shown(std::string_view key) {
  std::string out;
  for (char c : key.substr(0, 120)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (key.size() > 120) out += "...";
  return out;
}

}  // namespace

rejection_log::rejection_log(const lb_config& config, std::string origin)
    : metrics_(config.pool.client.metrics),
      registry_(detail::discovery_metrics_access::registry(metrics_)),
      origin_(std::move(origin)),
      max_keys_(std::max<std::size_t>(config.max_endpoints, 16) * 2) {}

void rejection_log::reject(std::string_view key, const rejection& r) {
  if (registry_ != nullptr) registry_->discovery_rejected(r.reason);
  std::lock_guard lk(mutex_);
  auto it = logged_.find(key);
  if (it != logged_.end()) {
    it->second.round = round_;
    if (it->second.reason == r.reason) return;
    it->second.reason = r.reason;
  } else if (logged_.size() >= max_keys_) {
    if (!said_quiet_) {
      said_quiet_ = true;
      std::fprintf(stderr,
                   "corvid: discovery %s: more than %zu entries rejected; further ones are "
                   "counted (corvid_discovery_rejected_total), not written\n",
                   origin_.c_str(), max_keys_);
    }
    return;
  } else {
    logged_.emplace(std::string(key), entry{r.reason, round_});
  }
  std::fprintf(stderr, "corvid: discovery %s: rejected %s (%s): %s\n", origin_.c_str(),
               shown(key).c_str(), metrics::to_string(r.reason), r.detail.c_str());
}

void rejection_log::reject_many(metrics::discovery_reject reason, std::uint64_t n,
                                std::string_view detail) {
  if (n == 0) return;
  if (registry_ != nullptr) registry_->discovery_rejected(reason, n);
  std::fprintf(stderr, "corvid: discovery %s: rejected %llu entries (%s): %.*s\n", origin_.c_str(),
               static_cast<unsigned long long>(n), metrics::to_string(reason),
               static_cast<int>(detail.size()), detail.data());
}

void rejection_log::clear(std::string_view key) {
  std::lock_guard lk(mutex_);
  if (auto it = logged_.find(key); it != logged_.end()) logged_.erase(it);
  if (logged_.size() < max_keys_) said_quiet_ = false;
}

void rejection_log::begin_round() {
  std::lock_guard lk(mutex_);
  ++round_;
}

void rejection_log::end_round() {
  std::lock_guard lk(mutex_);
  std::erase_if(logged_, [&](const auto& kv) { return kv.second.round != round_; });
  if (logged_.size() < max_keys_) said_quiet_ = false;
}

}  // namespace corvid::discovery
