#pragma once
// etcd v3 through its JSON gateway (HTTP/1.1,
// https://etcd.io/docs/v3.4/dev-guide/api_grpc_gateway/), spoken by libcurl with nlohmann::json:
// leases, puts, deletes, ranges and a watch read as a streaming response. Blocking; one client per
// thread (a curl handle is not shareable).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "corvid/error.hpp"
#include "corvid/expected.hpp"

namespace corvid::discovery {

struct etcd_kv {
  std::string key;
  std::string value;
  std::int64_t mod_revision = 0;
  bool value_unreadable = false;  // the gateway's value was not base64
  bool value_over_cap = false;    // too large to fetch at all: `value` is empty
};

struct etcd_range {
  std::vector<etcd_kv> kvs;
  std::int64_t revision = 0;  // the store's revision the range was read at
};

struct etcd_event {
  bool deleted = false;
  etcd_kv kv;
};

// How a watch ended.
enum class watch_end {
  stopped,    // the client's stop token was stopped
  broken,     // the stream or connection broke (etcd restarted, unreachable): resume it
  compacted,  // the start revision was compacted away: range again
  // A message over the watch's cap (resuming would meet it again), or the watcher asked to
  // stop (on_events returned false): range again.
  resync,
};

// The most bytes one answer (a range page, one watch message) may have; past it the
// transfer is abandoned. A page holds at most range_page_keys keys, halved on overflow.
inline constexpr std::size_t etcd_answer_cap = 16u << 20;
inline constexpr std::int64_t range_page_keys = 64;

class etcd_client {
 public:
  // endpoint: "host:port". A request in progress is aborted once `stop` is stopped (the
  // calling thread's, e.g. stoppable_worker's).
  etcd_client(std::string endpoint, std::chrono::milliseconds timeout, std::stop_token stop = {});
  ~etcd_client();
  etcd_client(const etcd_client&) = delete;
  etcd_client& operator=(const etcd_client&) = delete;

  expected<std::int64_t, rpc_error> grant(std::chrono::seconds ttl);  // the lease id
  // The TTL left; 0 = the lease has expired (or is unknown), so it must be granted again.
  expected<std::int64_t, rpc_error> keep_alive(std::int64_t lease);
  rpc_error revoke(std::int64_t lease);
  rpc_error put(std::string_view key, std::string_view value, std::int64_t lease = 0);
  rpc_error erase(std::string_view key);
  // Reads the keys under `prefix` in pages of at most range_page_keys, every page at the
  // revision of the first so the whole is one snapshot, calling `on_page` with each page's
  // keys and how many keys of the range follow them. A value too large to fetch under
  // etcd_answer_cap comes without its value (value_over_cap). on_page returns false to stop
  // reading. Returns the revision read at.
  expected<std::int64_t, rpc_error> range_pages(
      std::string_view prefix,
      const std::function<bool(std::vector<etcd_kv>& kvs, std::int64_t remaining)>& on_page);
  // Every key under `prefix` at once (tests, tools: a prefix known to be small).
  expected<etcd_range, rpc_error> range_prefix(std::string_view prefix);
  rpc_error compact(std::int64_t revision);  // drops the history before `revision`
  // Watches the keys under `prefix` from `start_revision`, calling `on_events` with each
  // batch and the revision it brings the watcher to, until the stream ends or on_events
  // returns false (resync). `on_created` runs once etcd has accepted the watch.
  watch_end watch_prefix(
      std::string_view prefix, std::int64_t start_revision,
      const std::function<bool(const std::vector<etcd_event>&, std::int64_t revision)>& on_events,
      const std::function<void()>& on_created = {});

  const std::string& endpoint() const noexcept { return endpoint_; }

 private:
  struct curl_state;
  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  std::stop_token stop_;
  std::unique_ptr<curl_state> curl_;
};

// "etcd://host:port/prefix" -> endpoint and prefix (without a trailing '/').
struct etcd_url {
  std::string endpoint;
  std::string prefix;
};
expected<etcd_url, rpc_error> parse_etcd_url(std::string_view url);

}  // namespace corvid::discovery
