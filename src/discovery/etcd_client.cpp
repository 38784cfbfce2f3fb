#include "etcd_client.hpp"

#include <algorithm>
#include <mutex>

#include "etcd_decode.hpp"
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

std::once_flag curl_init;

}  // namespace

struct etcd_client::curl_state {
  CURL* handle = nullptr;
  ~curl_state() {
    if (handle != nullptr) curl_easy_cleanup(handle);
  }
};

etcd_client::etcd_client(std::string endpoint, std::chrono::milliseconds timeout,
                         std::stop_token stop)
    : endpoint_(std::move(endpoint)), timeout_(timeout), stop_(std::move(stop)) {
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = std::make_unique<curl_state>();
  curl_->handle = curl_easy_init();
}

etcd_client::~etcd_client() = default;

namespace {

struct transfer {
  std::string body;
  std::function<bool(std::string&)> on_data;  // streaming: consumes complete messages
  std::stop_token stop;
  bool over_cap = false;  // the answer (a message, when streaming) passed etcd_answer_cap
};

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<transfer*>(user);
  // A runaway answer: abort, never grow unbounded. When streaming, `body` holds only the
  // message not complete yet, so the cap is per message.
  if (t->body.size() + size * n > etcd_answer_cap) {
    t->over_cap = true;
    return 0;
  }
  t->body.append(data, size * n);
  if (t->on_data && !t->on_data(t->body)) return 0;
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<transfer*>(user);
  return t->stop.stop_requested() ? 1 : 0;
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

// The message call() gives an answer over etcd_answer_cap (range_pages then asks for less).
constexpr std::string_view over_cap_message = "an answer over the cap";

expected<json, rpc_error> call(CURL* h, const std::string& endpoint, const char* path,
                               const json& request, std::chrono::milliseconds timeout,
                               const std::stop_token& stop) {
  if (h == nullptr) return unexpected(rpc_error(rpc_errc::connect_failed, "curl_easy_init failed"));
  transfer t;
  t.stop = stop;
  long status = 0;
  const std::string url = "http://" + endpoint + path;
  const CURLcode rc = perform(h, url, request.dump(), t, timeout, false, status);
  if (t.over_cap) {
    return unexpected(rpc_error(rpc_errc::message_too_large,
                                "etcd at " + endpoint + " sent " + std::string(over_cap_message) +
                                    " (" + std::to_string(etcd_answer_cap) + " bytes) to " +
                                    std::string(path)));
  }
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
    const std::string message = error_message(answer);
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
    return unexpected(
        rpc_error(rpc_errc::protocol_error, "etcd granted no lease: " + error_message(*r)));
  }
  return id;
}

expected<std::int64_t, rpc_error> etcd_client::keep_alive(std::int64_t lease) {
  // The gateway's keepalive is a stream; one request message gets one answer.
  auto r = call(curl_->handle, endpoint_, "/v3/lease/keepalive", {{"ID", std::to_string(lease)}},
                timeout_, stop_);
  if (!r) return unexpected(std::move(r).error());
  auto result = r->find("result");
  if (result == r->end() || !result->is_object()) return std::int64_t{0};
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

expected<std::int64_t, rpc_error> etcd_client::range_pages(
    std::string_view prefix,
    const std::function<bool(std::vector<etcd_kv>&, std::int64_t)>& on_page) {
  const std::string end = base64(prefix_end(std::string(prefix)));
  std::string from(prefix);
  std::int64_t revision = 0;  // 0: the first page picks it
  std::int64_t limit = range_page_keys;
  std::int64_t read = 0;
  for (;;) {
    json req{{"key", base64(from)}, {"range_end", end}, {"limit", std::to_string(limit)}};
    if (revision != 0) req["revision"] = std::to_string(revision);
    auto r = call(curl_->handle, endpoint_, "/v3/kv/range", req, timeout_, stop_);
    std::vector<etcd_kv> over_cap;  // a key whose value alone passes the cap
    if (!r && r.error().code() == rpc_errc::message_too_large) {
      if (limit > 1) {
        limit /= 2;  // etcd cannot bound a page by size: fewer keys per page
        continue;
      }
      // One key whose value passes the cap: learn its name alone, and step over it.
      req["keys_only"] = true;
      r = call(curl_->handle, endpoint_, "/v3/kv/range", req, timeout_, stop_);
      if (r) over_cap.emplace_back();
    }
    if (!r) return unexpected(std::move(r).error());
    auto page = decode_range_answer(*r);
    if (!page) {
      return unexpected(
          rpc_error(rpc_errc::protocol_error, "etcd at " + endpoint_ + ": " + page.error()));
    }
    if (revision == 0) revision = page->revision;
    if (!over_cap.empty()) {
      for (auto& kv : page->kvs) {
        kv.value.clear();
        kv.value_over_cap = true;
      }
    }
    read += static_cast<std::int64_t>(page->kvs.size() + page->unreadable);
    std::string last = page->kvs.empty() ? std::string() : page->kvs.back().key;
    const bool more = page->more && !last.empty();
    if (!on_page(page->kvs, more ? std::max<std::int64_t>(page->count - read, 1) : 0)) break;
    if (!more) break;
    from = std::move(last);
    from += '\0';  // the next key after the last one read
  }
  return revision;
}

expected<etcd_range, rpc_error> etcd_client::range_prefix(std::string_view prefix) {
  etcd_range out;
  auto revision = range_pages(prefix, [&](std::vector<etcd_kv>& kvs, std::int64_t) {
    for (auto& kv : kvs) out.kvs.push_back(std::move(kv));
    return true;
  });
  if (!revision) return unexpected(std::move(revision).error());
  out.revision = *revision;
  return out;
}

watch_end etcd_client::watch_prefix(
    std::string_view prefix, std::int64_t start_revision,
    const std::function<bool(const std::vector<etcd_event>&, std::int64_t)>& on_events,
    const std::function<void()>& on_created) {
  if (curl_->handle == nullptr) return watch_end::broken;
  json req{{"create_request",
            {{"key", base64(prefix)},
             {"range_end", base64(prefix_end(std::string(prefix)))},
             {"start_revision", std::to_string(start_revision)}}}};
  bool compacted = false, resync = false;
  transfer t;
  t.stop = stop_;
  // The gateway writes one JSON object per message, each followed by a newline.
  t.on_data = [&](std::string& buffer) {
    std::size_t start = 0;
    for (std::size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      watch_message m = decode_watch_message(std::string_view(buffer).substr(start, nl - start));
      switch (m.what) {
        case watch_message::kind::ignored:
          continue;
        case watch_message::kind::compacted:
          compacted = true;
          buffer.clear();
          return false;
        case watch_message::kind::ended:
          buffer.clear();
          return false;
        case watch_message::kind::update:
          break;
      }
      if (m.created && on_created) on_created();
      if (!m.events.empty() && !on_events(m.events, m.revision)) {
        resync = true;
        buffer.clear();
        return false;
      }
    }
    buffer.erase(0, start);
    return true;
  };
  long status = 0;
  perform(curl_->handle, "http://" + endpoint_ + "/v3/watch", req.dump(), t, timeout_, true,
          status);
  if (stop_.stop_requested()) return watch_end::stopped;
  if (compacted) return watch_end::compacted;
  return resync || t.over_cap ? watch_end::resync : watch_end::broken;
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
