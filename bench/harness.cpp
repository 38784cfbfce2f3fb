#include "harness.hpp"

#include <pthread.h>
#include <sched.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include "alloc_counter.hpp"
#include "bench_service.hpp"
#include "test_certs.hpp"

namespace corvid::bench {
namespace {
int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }
}  // namespace

bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % cores(), &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

std::unique_ptr<rpc_server> start_bench_server(const std::string& listen, int threads, bool pin,
                                               bool coalesce, std::string& error,
                                               const ibv_config* rdma, const tls_config* tls,
                                               bool metrics, std::chrono::microseconds busy_poll,
                                               std::chrono::microseconds adaptive_poll) {
  server_config cfg;
  cfg.metrics = metrics;
  cfg.busy_poll = busy_poll;
  cfg.adaptive_poll = adaptive_poll;
  cfg.io_threads = static_cast<std::size_t>(threads);
  cfg.coalesce_writes = coalesce;
  if (listen.starts_with("unix:")) {
    cfg.address = listen;
  } else {
    const auto colon = listen.rfind(':');
    cfg.address = listen.substr(0, colon);
    cfg.port = static_cast<std::uint16_t>(std::atoi(listen.substr(colon + 1).c_str()));
  }
  // Server reactors take the low cores, client reactors the high ones.
  cfg.on_thread_start = [pin](std::size_t i) {
    if (pin) pin_to_cpu(static_cast<int>(i));
    set_reactor_slot(i);
    track_this_thread();
  };
  auto server = std::make_unique<rpc_server>(cfg);
  register_bench_service(*server);
  if (rdma != nullptr) {
    if (auto ec = server->init_ibv(*rdma)) {
      error = ec.message();
      return nullptr;
    }
  }
  if (tls != nullptr) {
    if (auto ec = server->init_tls(*tls)) {
      error = ec.message();
      return nullptr;
    }
  }
  if (auto ec = server->async_start()) {
    error = ec.message();
    return nullptr;
  }
  set_bench_server(server.get());
  return server;
}

harness::harness(const harness_config& cfg) {
  endpoint_ = cfg.connect;
  std::optional<tls_config> client_tls;
  std::optional<tls_config> server_tls;
  if (cfg.tls) {
    certs_ = std::make_unique<test::test_certs>();
    server_tls = tls_config{.certificate_chain_file = certs_->server_cert,
                            .private_key_file = certs_->server_key};
    client_tls = tls_config{.ca_file = certs_->ca, .server_name = "localhost"};
  }
  if (endpoint_.empty()) {
    const std::string listen =
        cfg.transport == "uds" ? "unix:/tmp/corvid-bench-" + std::to_string(::getpid()) + ".sock"
                               : "127.0.0.1:0";
    std::string error;
    server_ = start_bench_server(listen, cfg.server_threads, cfg.pin, cfg.server_coalesce, error,
                                 cfg.transport == "rdma" ? &cfg.rdma : nullptr,
                                 server_tls ? &*server_tls : nullptr, true, cfg.busy_poll,
                                 cfg.adaptive_poll);
    if (!server_) throw std::runtime_error("server: " + error);
    endpoint_ = cfg.transport == "uds" ? listen : "127.0.0.1:" + std::to_string(server_->port());
  }
  client_pool_ = std::make_unique<io_pool>(
      static_cast<std::size_t>(cfg.client_threads),
      [pin = cfg.pin](std::size_t i) {
        if (pin) pin_to_cpu(cores() - 1 - static_cast<int>(i));
      },
      std::chrono::nanoseconds{}, cfg.adaptive_poll);
  const auto metrics = cfg.client_metrics ? std::make_shared<client_metrics>() : nullptr;
  if (cfg.pool != 0) {
    pool_config pc;
    pc.client.metrics = metrics;
    pc.max_connections = cfg.pool > 0 ? static_cast<std::size_t>(cfg.pool) : 0;
    pc.spread_in_flight = cfg.pool_spread_in_flight;
    pc.client.pool = client_pool_.get();
    pc.client.request_timeout = std::chrono::milliseconds(60000);
    pc.client.max_queued_request_bytes = cfg.client_queue;
    pc.client.tls = client_tls;
    pc.client.busy_poll = cfg.busy_poll;
    if (cfg.balancer) {
      lb_config lc;
      lc.pool = pc;
      auto lb = sync_wait(load_balancer::open("list://" + endpoint_, lc));
      if (!lb) throw std::runtime_error("balancer on " + endpoint_ + ": " + lb.error().message());
      balancer_ = std::move(*lb);
      return;
    }
    pool_ = client_pool::create(endpoint_, pc);
    return;
  }
  for (int i = 0; i < cfg.connections; ++i) {
    client_config cc;
    cc.pool = client_pool_.get();
    cc.coalesce_writes = cfg.client_coalesce;
    cc.request_timeout = std::chrono::milliseconds(60000);
    cc.max_queued_request_bytes = cfg.client_queue;
    cc.tls = client_tls;
    cc.busy_poll = cfg.busy_poll;
    cc.stream_window = cfg.stream_window;
    cc.max_stream_window = cfg.max_stream_window;
    cc.metrics = metrics;
    auto c = std::make_unique<rpc_client>(cc);
    if (cfg.transport == "rdma") {
      if (auto ec = c->init_ibv(cfg.rdma)) throw std::runtime_error("init_ibv: " + ec.message());
    }
    auto ec = sync_wait([&]() -> task<rpc_error> {
      co_return co_await c->connect(endpoint_);
    }());
    if (ec) throw std::runtime_error("connect " + endpoint_ + ": " + ec.message());
    client_ptrs_.push_back(c.get());
    clients_.push_back(std::move(c));
  }
}

harness::~harness() {
  balancer_.reset();
  pool_.reset();
  clients_.clear();
  client_ptrs_.clear();
  client_pool_.reset();
  if (server_) {
    set_bench_server(nullptr);
    server_->stop();
  }
}

}  // namespace corvid::bench
