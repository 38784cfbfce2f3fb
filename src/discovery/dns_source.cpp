// dns://name:port: the name's A and AAAA records through c-ares (lb_config::dns_server picks
// the server, e.g. a test's dnsmasq), looked up again every dns_refresh_interval and soon
// after an endpoint fails. A failed lookup keeps the last endpoints. c-ares is driven with
// poll() on the sockets its socket-state callback names, never select(): a process may hold
// any number of descriptors. At most lb_config::max_endpoints addresses are used.
#include <algorithm>
#include <ares.h>
#include <charconv>
#include <cstdio>
#include <mutex>
#include <poll.h>

#include "endpoint_source.hpp"
#include "rejection_log.hpp"
#include "stoppable_worker.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>

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

// The sockets c-ares waits on, as its socket-state callback tells them.
void on_socket_state(void* data, ares_socket_t fd, int readable, int writable) {
  auto* fds = static_cast<std::vector<pollfd>*>(data);
  auto it = std::find_if(fds->begin(), fds->end(), [&](const pollfd& p) { return p.fd == fd; });
  if (!readable && !writable) {
    if (it != fds->end()) fds->erase(it);
    return;
  }
  if (it == fds->end()) it = fds->insert(fds->end(), pollfd{fd, 0, 0});
  it->events = static_cast<short>((readable ? POLLIN : 0) | (writable ? POLLOUT : 0));
}

// One lookup of `host`, driven to its end (c-ares' own timeouts and retries bound it).
expected<std::vector<std::string>, rpc_error> resolve(const std::string& host,
                                                      const std::string& server) {
  std::call_once(ares_init, [] { ares_library_init(ARES_LIB_INIT_ALL); });
  ares_channel channel = nullptr;
  std::vector<pollfd> fds;
  ares_options opts{};
  opts.timeout = 1000;  // ms per try
  opts.tries = 2;
  opts.sock_state_cb = on_socket_state;
  opts.sock_state_cb_data = &fds;
  if (ares_init_options(&channel, &opts,
                        ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB) !=
      ARES_SUCCESS) {
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
    timeval tv{};
    const timeval* next = ares_timeout(channel, nullptr, &tv);
    if (next == nullptr && fds.empty()) break;  // nothing pending: the callback has run
    const int ms =
        next == nullptr ? 1000 : static_cast<int>(next->tv_sec * 1000 + next->tv_usec / 1000);
    // A copy: processing a socket may open or close others (the callback edits `fds`).
    std::vector<pollfd> ready = fds;
    const int n = ::poll(ready.data(), ready.size(), std::max(ms, 0));
    if (n <= 0) {
      ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // timeouts
      continue;
    }
    for (const pollfd& p : ready) {
      if (p.revents == 0) continue;
      const bool r = (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
      const bool w = (p.revents & (POLLOUT | POLLERR | POLLHUP)) != 0;
      ares_process_fd(channel, r ? p.fd : ARES_SOCKET_BAD, w ? p.fd : ARES_SOCKET_BAD);
    }
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

// The answer's addresses (sorted, so every client keeps the same ones past the bound), at
// most max_endpoints of them, those handed over before first.
std::vector<lb_endpoint> to_endpoints(const std::vector<std::string>& addresses,
                                      const std::string& port, const lb_config& config,
                                      const std::vector<lb_endpoint>& held, rejection_log& log) {
  std::vector<lb_endpoint> out;
  for (const auto& a : addresses) {
    lb_endpoint e;
    e.address = a + ":" + port;
    if (auto bad = check_address(e.address)) {
      log.reject(a, *bad);
      continue;
    }
    out.push_back(std::move(e));
  }
  if (const std::size_t dropped =
          keep_bounded(out, held, std::max<std::size_t>(config.max_endpoints, 1))) {
    log.reject_many(metrics::discovery_reject::over_limit, dropped,
                    "addresses past lb_config::max_endpoints");
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
        config_(config),
        log_(config, "dns://" + host_ + ":" + port_),
        cb_(std::move(cb)) {}
  // The first lookup, on the opener's thread: its error is open()'s.
  rpc_error open() {
    auto first = resolve(host_, server_);
    if (!first) return std::move(first).error();
    held_ = to_endpoints(*first, port_, config_, held_, log_);
    cb_(held_);
    worker_.start([this](std::stop_token stop) { run(stop); });
    return {};
  }
  // A refresh asked for while a lookup runs is kept: the next lookup follows the gap.
  void refresh_soon() override { worker_.wake(); }

 private:
  void run(const std::stop_token& stop) {
    // After a failure-triggered lookup, the next one waits at least this long: a dead
    // endpoint fails many calls, not each worth a query.
    const std::chrono::milliseconds min_gap(500);
    while (worker_.wait_for_wake(stop, interval_)) {
      try {
        if (auto r = resolve(host_, server_)) {
          held_ = to_endpoints(*r, port_, config_, held_, log_);
          cb_(held_);
        }
      } catch (const std::exception& e) {
        // Out of memory: this lookup is skipped; the thread never ends the process.
        std::fprintf(stderr, "corvid: discovery dns://%s: %s\n", host_.c_str(), e.what());
      }
      if (!worker_.sleep_for(stop, min_gap)) return;
    }
  }

  const std::string host_, port_, server_;
  const std::chrono::milliseconds interval_;
  const lb_config config_;
  rejection_log log_;
  endpoints_callback cb_;
  std::vector<lb_endpoint> held_;  // handed over last
  stoppable_worker worker_;        // last: its thread goes before what it uses
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
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return unexpected(rpc_error(rpc_errc::invalid_argument,
                                "dns URL's port is not a number 1..65535: " + std::string(url)));
  }
  auto source =
      std::make_unique<dns_source>(std::move(host), std::move(port), config, std::move(cb));
  if (auto e = source->open()) return unexpected(std::move(e));
  return std::unique_ptr<endpoint_source>(std::move(source));
}

}  // namespace corvid::discovery
