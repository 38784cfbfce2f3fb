// dns://name:port: the name's A and AAAA records through c-ares (lb_config::dns_server picks
// the server, e.g. a test's dnsmasq), looked up again every dns_refresh_interval and soon
// after an endpoint fails. A failed lookup keeps the last endpoints.
#include <algorithm>
#include <ares.h>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "endpoint_source.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>

namespace corvid::discovery {
namespace {

std::once_flag ares_init;

struct lookup {
  bool done = false;
  int status = ARES_SUCCESS;
  std::vector<std::string> addresses;
};

void on_addrinfo(void* arg, int status, int, ares_addrinfo* result) {
  auto* l = static_cast<lookup*>(arg);
  l->done = true;
  l->status = status;
  if (result == nullptr) return;
  for (auto* n = result->nodes; n != nullptr; n = n->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (n->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(n->ai_addr)->sin_addr, text, sizeof text);
      l->addresses.emplace_back(text);
    } else if (n->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(n->ai_addr)->sin6_addr, text,
                sizeof text);
      l->addresses.push_back("[" + std::string(text) + "]");
    }
  }
  ares_freeaddrinfo(result);
}

// One lookup of `host`, driven to its end (c-ares' own timeouts and retries bound it).
expected<std::vector<std::string>, rpc_error> resolve(const std::string& host,
                                                      const std::string& server) {
  std::call_once(ares_init, [] { ares_library_init(ARES_LIB_INIT_ALL); });
  ares_channel channel = nullptr;
  ares_options opts{};
  opts.timeout = 1000;  // ms per try
  opts.tries = 2;
  if (ares_init_options(&channel, &opts, ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES) != ARES_SUCCESS) {
    return unexpected(rpc_error(rpc_errc::connect_failed, "c-ares: cannot create a channel"));
  }
  if (!server.empty() && ares_set_servers_ports_csv(channel, server.c_str()) != ARES_SUCCESS) {
    ares_destroy(channel);
    return unexpected(rpc_error(rpc_errc::invalid_argument, "bad dns_server '" + server + "'"));
  }
  lookup l;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  ares_getaddrinfo(channel, host.c_str(), nullptr, &hints, on_addrinfo, &l);
  while (!l.done) {
    fd_set r, w;
    FD_ZERO(&r);
    FD_ZERO(&w);
    const int nfds = ares_fds(channel, &r, &w);
    if (nfds == 0) break;
    timeval tv{}, *tvp = ares_timeout(channel, nullptr, &tv);
    ::select(nfds, &r, &w, nullptr, tvp);
    ares_process(channel, &r, &w);
  }
  ares_destroy(channel);  // calls a pending callback with ARES_EDESTRUCTION
  if (l.status != ARES_SUCCESS || l.addresses.empty()) {
    return unexpected(rpc_error(rpc_errc::connect_failed,
                                "cannot resolve " + host + ": " + ares_strerror(l.status)));
  }
  std::sort(l.addresses.begin(), l.addresses.end());
  l.addresses.erase(std::unique(l.addresses.begin(), l.addresses.end()), l.addresses.end());
  return std::move(l.addresses);
}

std::vector<lb_endpoint> to_endpoints(const std::vector<std::string>& addresses,
                                      const std::string& port) {
  std::vector<lb_endpoint> out;
  for (const auto& a : addresses) {
    lb_endpoint e;
    e.address = a + ":" + port;
    out.push_back(std::move(e));
  }
  return out;
}

class dns_source final : public endpoint_source {
 public:
  dns_source(std::string host, std::string port, const lb_config& config, endpoints_callback cb)
      : host_(std::move(host)),
        port_(std::move(port)),
        server_(config.dns_server),
        interval_(config.dns_refresh_interval),
        cb_(std::move(cb)) {
    thread_ = std::thread([this] { run(); });
  }
  ~dns_source() override {
    {
      std::lock_guard lk(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void refresh_soon() override {
    {
      std::lock_guard lk(mutex_);
      refresh_ = true;
    }
    cv_.notify_all();
  }

 private:
  void run() {
    // After a failure-triggered lookup, the next one waits at least this long: a dead
    // endpoint fails many calls, not each worth a query.
    const std::chrono::milliseconds min_gap(500);
    std::unique_lock lk(mutex_);
    for (;;) {
      cv_.wait_for(lk, interval_, [&] { return stop_ || refresh_; });
      if (stop_) return;
      refresh_ = false;
      lk.unlock();
      auto r = resolve(host_, server_);
      if (r) cb_(to_endpoints(*r, port_));
      lk.lock();
      cv_.wait_for(lk, min_gap, [&] { return stop_; });
      if (stop_) return;
    }
  }

  const std::string host_, port_, server_;
  const std::chrono::milliseconds interval_;
  endpoints_callback cb_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool refresh_ = false;
  std::thread thread_;
};

}  // namespace

expected<std::unique_ptr<endpoint_source>, rpc_error> open_dns_source(std::string_view url,
                                                                      const lb_config& config,
                                                                      endpoints_callback cb) {
  std::string_view rest = url.substr(6);  // after dns://
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) {
    return unexpected(
        rpc_error(rpc_errc::invalid_argument, "dns URL needs name:port: " + std::string(url)));
  }
  std::string host(rest.substr(0, colon)), port(rest.substr(colon + 1));
  auto first = resolve(host, config.dns_server);
  if (!first) return unexpected(std::move(first).error());
  cb(to_endpoints(*first, port));
  return std::unique_ptr<endpoint_source>(
      std::make_unique<dns_source>(std::move(host), std::move(port), config, std::move(cb)));
}

}  // namespace corvid::discovery
