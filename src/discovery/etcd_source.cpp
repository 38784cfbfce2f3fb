// etcd://host:port/prefix: range the prefix, then watch it from the next revision. A broken
// watch resumes from the last revision seen, so no change is missed or applied twice; a
// compacted one ranges again. While etcd is out of reach nothing is handed over: the
// balancer keeps the endpoints it last knew.
//
// Everything etcd says is outside input (etcd_decode.hpp): a value that does not describe an
// instance is rejected, counted and written once (rejection_log.hpp), and never stops the
// source. The source holds at most 2 * lb_config::max_endpoints keys (the balancer applies
// the exact cap); keys past it are rejected as over_limit until a deletion makes room, when
// the prefix is read again.
#include <cstdio>
#include <map>

#include "endpoint_source.hpp"
#include "etcd_client.hpp"
#include "etcd_decode.hpp"
#include "rejection_log.hpp"
#include "stoppable_worker.hpp"

namespace corvid::discovery {
namespace {

using metrics::discovery_reject;

class etcd_source final : public endpoint_source {
 public:
  etcd_source(etcd_url url, const lb_config& config, endpoints_callback cb)
      : url_(std::move(url)),
        max_value_bytes_(config.max_registry_value_bytes),
        max_keys_(std::max<std::size_t>(config.max_endpoints, 1) * 2),
        log_(config, "etcd://" + url_.endpoint + url_.prefix),
        cb_(std::move(cb)) {}

  // The first read, on the opener's thread: its error is open()'s.
  rpc_error open() {
    etcd_client etcd(url_.endpoint, std::chrono::milliseconds(2000));
    if (auto e = read_all(etcd)) return e;
    worker_.start([this](std::stop_token stop) { run(stop); });
    return {};
  }

 private:
  // One key's value: its endpoint, or why not.
  expected<lb_endpoint, rejection> decode(const etcd_kv& kv) const {
    if (kv.value_over_cap) {
      return unexpected(
          rejection{discovery_reject::too_large,
                    "value over the answer cap (" + std::to_string(etcd_answer_cap) + " bytes)"});
    }
    if (kv.value_unreadable) {
      return unexpected(rejection{discovery_reject::not_json, "value is not base64"});
    }
    return decode_instance(kv.key, kv.value, max_value_bytes_);
  }
  rejection over_limit() const {
    return {discovery_reject::over_limit, "the source holds " + std::to_string(max_keys_) +
                                              " keys (2 * lb_config::max_endpoints)"};
  }

  // Ranges the prefix page by page (one snapshot) and hands the result over. Keys the source
  // held before keep their place: new keys take only the room the held ones leave, so a
  // flood of keys read again after a compaction cannot push out the servers followed.
  rpc_error read_all(etcd_client& etcd) {
    std::map<std::string, lb_endpoint> keys;
    std::size_t held_unseen = keys_.size();
    bool full = false;
    log_.begin_round();
    auto revision = etcd.range_pages(url_.prefix, [&](std::vector<etcd_kv>& kvs,
                                                      std::int64_t remaining) {
      for (std::size_t i = 0; i < kvs.size(); ++i) {
        const bool held = keys_.contains(kvs[i].key);
        if (held) --held_unseen;
        auto e = decode(kvs[i]);
        if (!e) {
          log_.reject(kvs[i].key, e.error());
          continue;
        }
        if (!held && keys.size() + held_unseen >= max_keys_) {
          full = true;
          if (held_unseen == 0) {
            // The rest of the range is not read at all.
            log_.reject_many(discovery_reject::over_limit,
                             static_cast<std::uint64_t>(kvs.size() - i) +
                                 static_cast<std::uint64_t>(std::max<std::int64_t>(remaining, 0)),
                             "keys past the source's bound (2 * lb_config::max_endpoints), not "
                             "read");
            return false;
          }
          log_.reject(kvs[i].key, over_limit());
          continue;
        }
        log_.clear(kvs[i].key);
        keys.insert_or_assign(kvs[i].key, std::move(*e));
      }
      return true;
    });
    if (!revision) return std::move(revision).error();
    log_.end_round();
    keys_ = std::move(keys);
    full_ = full;
    revision_ = *revision;
    publish();
    return {};
  }

  void publish() {
    std::vector<lb_endpoint> list;
    list.reserve(keys_.size());
    for (const auto& [key, e] : keys_) list.push_back(e);
    cb_(std::move(list));
  }
  // False: read the prefix again (a deletion made room for keys turned away as over_limit).
  bool on_events(const std::vector<etcd_event>& events, std::int64_t revision) {
    bool room = false;
    for (const auto& ev : events) {
      if (ev.deleted) {
        room = keys_.erase(ev.kv.key) > 0 || room;
        log_.clear(ev.kv.key);
        continue;
      }
      auto e = decode(ev.kv);
      if (!e) {
        // The key's value now describes no instance: the endpoint it described goes.
        room = keys_.erase(ev.kv.key) > 0 || room;
        log_.reject(ev.kv.key, e.error());
        continue;
      }
      auto it = keys_.find(ev.kv.key);
      if (it == keys_.end() && keys_.size() >= max_keys_) {
        full_ = true;
        log_.reject(ev.kv.key, over_limit());
        continue;
      }
      log_.clear(ev.kv.key);
      keys_.insert_or_assign(ev.kv.key, std::move(*e));
    }
    revision_ = std::max(revision_, revision);
    publish();
    return !(room && full_);
  }

  // Whatever goes wrong (out of memory), the source's thread never ends the process: it
  // writes why, waits, and reads the prefix again.
  void run(const std::stop_token& stop) {
    bool need_range = false;
    while (!stop.stop_requested()) {
      try {
        follow(stop, need_range);
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "corvid: discovery etcd://%s%s: %s; reading the prefix again\n",
                     url_.endpoint.c_str(), url_.prefix.c_str(), e.what());
      }
      need_range = true;
      if (!worker_.sleep_for(stop, std::chrono::milliseconds(2000))) return;
    }
  }

  void follow(const std::stop_token& stop, bool need_range) {
    // The stop token also aborts the request in progress, the watch above all.
    etcd_client etcd(url_.endpoint, std::chrono::milliseconds(2000), stop);
    const std::chrono::milliseconds initial(100), max_backoff(2000);
    // Between two reads the watch asked for: a registry churning at the bound costs a read
    // a second at most.
    const std::chrono::milliseconds resync_gap(1000);
    auto backoff = initial;
    while (!stop.stop_requested()) {
      if (need_range) {
        if (read_all(etcd)) {
          if (!worker_.sleep_for(stop, backoff)) break;
          backoff = std::min(backoff * 2, max_backoff);
          continue;
        }
        need_range = false;
      }
      const watch_end end = etcd.watch_prefix(
          url_.prefix, revision_ + 1,
          [&](const std::vector<etcd_event>& events, std::int64_t revision) {
            return on_events(events, revision);
          },
          [&] { backoff = initial; });
      if (end == watch_end::stopped) break;
      if (end == watch_end::compacted) {
        need_range = true;
        continue;
      }
      if (end == watch_end::resync) {
        need_range = true;
        if (!worker_.sleep_for(stop, resync_gap)) break;
        continue;
      }
      // Broken (etcd restarted, or out of reach): resume from the last revision seen.
      if (!worker_.sleep_for(stop, backoff)) break;
      backoff = std::min(backoff * 2, max_backoff);
    }
  }

  const etcd_url url_;
  const std::size_t max_value_bytes_;
  const std::size_t max_keys_;
  rejection_log log_;
  endpoints_callback cb_;
  // By key; only the thread touches these after open().
  std::map<std::string, lb_endpoint> keys_;
  bool full_ = false;  // keys were turned away as over_limit since the last read
  std::int64_t revision_ = 0;
  stoppable_worker worker_;  // last: its thread goes before what it uses
};

}  // namespace

expected<std::unique_ptr<endpoint_source>, rpc_error> open_etcd_source(std::string_view url,
                                                                       const lb_config& config,
                                                                       endpoints_callback cb) {
  auto parsed = parse_etcd_url(url);
  if (!parsed) return unexpected(std::move(parsed).error());
  // The prefix's own keys: "<prefix>/" so that /services/echo does not match /services/echo2.
  parsed->prefix += '/';
  auto source = std::make_unique<etcd_source>(std::move(*parsed), config, std::move(cb));
  if (auto e = source->open()) return unexpected(std::move(e));
  return std::unique_ptr<endpoint_source>(std::move(source));
}

}  // namespace corvid::discovery
