#include "etcd_client.hpp"

#include <mutex>

#include <curl/curl.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace corvid::discovery {

using json = nlohmann::json;

namespace {

// The gateway carries keys and values as base64 (bytes in the protobuf).
std::string base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string unbase64(std::string_view in) {
  if (in.empty()) return {};
  std::string out(3 * (in.size() / 4) + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  if (n < 0) return {};
  std::size_t size = static_cast<std::size_t>(n);
  // EVP_DecodeBlock counts the padding as zero bytes.
  for (std::size_t i = in.size(); i > 0 && in[i - 1] == '='; --i) --size;
  out.resize(size);
  return out;
}

// The end of the range of keys starting with `prefix` (etcd's "prefix + 1").
std::string prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(prefix.back());
    if (last < 0xff) {
      ++last;
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

// int64 fields arrive as JSON strings (proto3 JSON mapping); absent = 0.
std::int64_t int_field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return 0;
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (...) {
      return 0;
    }
  }
  return it->is_number() ? it->get<std::int64_t>() : 0;
}

etcd_kv decode_kv(const json& kv) {
  etcd_kv out;
  out.key = unbase64(kv.value("key", ""));
  out.value = unbase64(kv.value("value", ""));
  out.mod_revision = int_field(kv, "mod_revision");
  return out;
}

std::once_flag curl_init;

}  // namespace

struct etcd_client::curl_state {
  CURL* handle = nullptr;
  ~curl_state() {
    if (handle != nullptr) curl_easy_cleanup(handle);
  }
};

etcd_client::etcd_client(std::string endpoint, std::chrono::milliseconds timeout,
                         const std::atomic<bool>* stop)
    : endpoint_(std::move(endpoint)), timeout_(timeout), stop_(stop) {
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = std::make_unique<curl_state>();
  curl_->handle = curl_easy_init();
}

etcd_client::~etcd_client() = default;

namespace {

struct transfer {
  std::string body;
  std::function<bool(std::string&)> on_data;  // streaming: consumes complete messages
  const std::atomic<bool>* stop = nullptr;
};

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<transfer*>(user);
  t->body.append(data, size * n);
  if (t->body.size() > (64u << 20)) return 0;  // a runaway answer: abort, never grow unbounded
  if (t->on_data && !t->on_data(t->body)) return 0;
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<transfer*>(user);
  return t->stop != nullptr && t->stop->load(std::memory_order_relaxed) ? 1 : 0;
}

// One POST of `body` to the gateway; streaming when t.on_data is set (no total timeout).
CURLcode perform(CURL* h, const std::string& url, const std::string& body, transfer& t,
                 std::chrono::milliseconds timeout, bool streaming, long& status) {
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for resolver timeouts
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
  if (!streaming) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  // A watch may be silent for long; TCP keepalive notices a peer that vanished.
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 5L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 2L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
  const CURLcode rc = curl_easy_perform(h);
  status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  return rc;
}

}  // namespace

namespace {
expected<json, rpc_error> call(CURL* h, const std::string& endpoint, const char* path,
                               const json& request, std::chrono::milliseconds timeout,
                               const std::atomic<bool>* stop) {
  if (h == nullptr) return unexpected(rpc_error(rpc_errc::connect_failed, "curl_easy_init failed"));
  transfer t;
  t.stop = stop;
  long status = 0;
  const std::string url = "http://" + endpoint + path;
  const CURLcode rc = perform(h, url, request.dump(), t, timeout, false, status);
  if (rc != CURLE_OK) {
    return unexpected(
        rpc_error(rpc_errc::connect_failed, "etcd at " + endpoint + ": " + curl_easy_strerror(rc)));
  }
  json answer = json::parse(t.body, nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) {
    return unexpected(rpc_error(rpc_errc::protocol_error,
                                "etcd at " + endpoint + " answered " + std::string(path) +
                                    " with HTTP " + std::to_string(status) + " and no JSON"));
  }
  if (status != 200) {
    std::string message = answer.value("message", answer.value("error", std::string()));
    return unexpected(rpc_error(rpc_errc::bad_request, "etcd at " + endpoint + " refused " +
                                                           std::string(path) + ": HTTP " +
                                                           std::to_string(status) + " " + message));
  }
  return answer;
}
}  // namespace

expected<std::int64_t, rpc_error> etcd_client::grant(std::chrono::seconds ttl) {
  auto r =
      call(curl_->handle, endpoint_, "/v3/lease/grant", {{"TTL", ttl.count()}}, timeout_, stop_);
  if (!r) return unexpected(std::move(r).error());
  const std::int64_t id = int_field(*r, "ID");
  if (id == 0) {
    return unexpected(rpc_error(rpc_errc::protocol_error,
                                "etcd granted no lease: " + r->value("error", std::string())));
  }
  return id;
}

expected<std::int64_t, rpc_error> etcd_client::keep_alive(std::int64_t lease) {
  // The gateway's keepalive is a stream; one request message gets one answer.
  auto r = call(curl_->handle, endpoint_, "/v3/lease/keepalive", {{"ID", std::to_string(lease)}},
                timeout_, stop_);
  if (!r) return unexpected(std::move(r).error());
  auto result = r->find("result");
  if (result == r->end()) return std::int64_t{0};
  return int_field(*result, "TTL");
}

rpc_error etcd_client::revoke(std::int64_t lease) {
  auto r = call(curl_->handle, endpoint_, "/v3/lease/revoke", {{"ID", std::to_string(lease)}},
                timeout_, stop_);
  return r ? rpc_error() : std::move(r).error();
}

rpc_error etcd_client::put(std::string_view key, std::string_view value, std::int64_t lease) {
  json req{{"key", base64(key)}, {"value", base64(value)}};
  if (lease != 0) req["lease"] = std::to_string(lease);
  auto r = call(curl_->handle, endpoint_, "/v3/kv/put", req, timeout_, stop_);
  return r ? rpc_error() : std::move(r).error();
}

rpc_error etcd_client::erase(std::string_view key) {
  auto r =
      call(curl_->handle, endpoint_, "/v3/kv/deleterange", {{"key", base64(key)}}, timeout_, stop_);
  return r ? rpc_error() : std::move(r).error();
}

rpc_error etcd_client::compact(std::int64_t revision) {
  auto r = call(curl_->handle, endpoint_, "/v3/kv/compaction",
                {{"revision", std::to_string(revision)}, {"physical", true}}, timeout_, stop_);
  return r ? rpc_error() : std::move(r).error();
}

expected<etcd_range, rpc_error> etcd_client::range_prefix(std::string_view prefix) {
  json req{{"key", base64(prefix)}, {"range_end", base64(prefix_end(std::string(prefix)))}};
  auto r = call(curl_->handle, endpoint_, "/v3/kv/range", req, timeout_, stop_);
  if (!r) return unexpected(std::move(r).error());
  etcd_range out;
  if (auto h = r->find("header"); h != r->end()) out.revision = int_field(*h, "revision");
  if (auto kvs = r->find("kvs"); kvs != r->end() && kvs->is_array()) {
    for (const auto& kv : *kvs) out.kvs.push_back(decode_kv(kv));
  }
  return out;
}

watch_end etcd_client::watch_prefix(
    std::string_view prefix, std::int64_t start_revision,
    const std::function<void(const std::vector<etcd_event>&, std::int64_t)>& on_events,
    const std::function<void()>& on_created) {
  if (curl_->handle == nullptr) return watch_end::broken;
  json req{{"create_request",
            {{"key", base64(prefix)},
             {"range_end", base64(prefix_end(std::string(prefix)))},
             {"start_revision", std::to_string(start_revision)}}}};
  bool compacted = false;
  transfer t;
  t.stop = stop_;
  // The gateway writes one JSON object per message, each followed by a newline.
  t.on_data = [&](std::string& buffer) {
    std::size_t start = 0;
    for (std::size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      json message =
          json::parse(std::string_view(buffer).substr(start, nl - start), nullptr, false);
      if (message.is_discarded() || !message.is_object()) continue;
      auto result = message.find("result");
      if (result == message.end()) {
        buffer.clear();
        return false;  // {"error": ...}: the stream is over
      }
      if (int_field(*result, "compact_revision") != 0) {
        compacted = true;
        buffer.clear();
        return false;
      }
      if (result->value("canceled", false)) {
        buffer.clear();
        return false;
      }
      if (result->value("created", false) && on_created) on_created();
      std::int64_t revision = 0;
      if (auto h = result->find("header"); h != result->end()) {
        revision = int_field(*h, "revision");
      }
      std::vector<etcd_event> events;
      if (auto evs = result->find("events"); evs != result->end() && evs->is_array()) {
        for (const auto& e : *evs) {
          etcd_event ev;
          ev.deleted = e.value("type", std::string()) == "DELETE";
          if (auto kv = e.find("kv"); kv != e.end()) ev.kv = decode_kv(*kv);
          // The events' own revision: the header's may run ahead of them.
          revision = std::max(revision, ev.kv.mod_revision);
          events.push_back(std::move(ev));
        }
      }
      if (!events.empty()) on_events(events, revision);
    }
    buffer.erase(0, start);
    return true;
  };
  long status = 0;
  perform(curl_->handle, "http://" + endpoint_ + "/v3/watch", req.dump(), t, timeout_, true,
          status);
  if (stop_ != nullptr && stop_->load()) return watch_end::stopped;
  return compacted ? watch_end::compacted : watch_end::broken;
}

expected<etcd_url, rpc_error> parse_etcd_url(std::string_view url) {
  constexpr std::string_view scheme = "etcd://";
  if (!url.starts_with(scheme)) {
    return unexpected(
        rpc_error(rpc_errc::invalid_argument, "not an etcd:// URL: " + std::string(url)));
  }
  url.remove_prefix(scheme.size());
  const auto slash = url.find('/');
  etcd_url out;
  out.endpoint = std::string(url.substr(0, slash));
  if (slash != std::string_view::npos) out.prefix = std::string(url.substr(slash));
  while (out.prefix.size() > 1 && out.prefix.back() == '/') out.prefix.pop_back();
  if (out.endpoint.empty() || out.endpoint.find(':') == std::string::npos) {
    return unexpected(
        rpc_error(rpc_errc::invalid_argument,
                  "etcd URL needs host:port: " + std::string(scheme) + std::string(url)));
  }
  if (out.prefix.empty() || out.prefix == "/") {
    return unexpected(
        rpc_error(rpc_errc::invalid_argument,
                  "etcd URL needs a key prefix, e.g. etcd://host:2379/services/echo"));
  }
  return out;
}

}  // namespace corvid::discovery
