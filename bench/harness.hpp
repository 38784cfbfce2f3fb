#pragma once
// A server (in this process, unless connecting to another) plus connected clients on their
// own reactor pool, with server and client reactors pinned to different cores.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <corvid/corvid.hpp>

namespace corvid::test {
class test_certs;
}

namespace corvid::bench {

struct harness_config {
  std::string transport = "tcp";  // tcp | uds | rdma (rdma: init_ibv() on server and clients)
  bool tls = false;               // TLS with certificates made at run time
  ibv_config rdma;                // with transport "rdma"
  std::string connect;            // non-empty: use that server instead of starting one
  int server_threads = 1;
  int client_threads = 1;
  int connections = 1;
  // > 0: a client_pool of up to this many connections instead of `connections`; -1: one with
  // pool_config's default max_connections (auto: the server's reactor count, at least 4).
  int pool = 0;
  bool balancer = false;  // calls through a load_balancer on list://<server> over that pool
  std::size_t pool_spread_in_flight = pool_config{}.spread_in_flight;  // 0: the old rule
  bool pin = true;
  std::size_t client_queue = client_config{}.max_queued_request_bytes;
  bool server_coalesce = true;
  bool client_coalesce = true;
  std::chrono::microseconds busy_poll{0};  // server and client reactors (0 = off)
  std::chrono::microseconds adaptive_poll = io_pool::default_adaptive_poll;  // both (0 = off)
  std::size_t stream_window = client_config{}.stream_window;                 // the clients'
  std::size_t max_stream_window = client_config{}.max_stream_window;         // the clients'
  bool client_metrics = false;  // the clients count into one client_metrics
};

class harness {
 public:
  explicit harness(const harness_config& cfg);
  ~harness();
  const std::vector<rpc_client*>& clients() const { return client_ptrs_; }
  client_pool* pool() const { return pool_.get(); }
  load_balancer* balancer() const { return balancer_.get(); }
  io_pool* reactors() const { return client_pool_.get(); }  // the clients' (and pool's)
  const std::string& endpoint() const { return endpoint_; }

 private:
  std::unique_ptr<test::test_certs> certs_;  // --tls
  std::unique_ptr<rpc_server> server_;
  std::unique_ptr<io_pool> client_pool_;
  std::vector<std::unique_ptr<rpc_client>> clients_;
  std::vector<rpc_client*> client_ptrs_;
  std::shared_ptr<client_pool> pool_;
  std::shared_ptr<load_balancer> balancer_;
  std::string endpoint_;
};

// Pins the calling thread to `cpu` (modulo the core count); false if that failed.
bool pin_to_cpu(int cpu);
// Starts a server for `corvid-bench server`, pinned like the in-process one.
// With `rdma` set, the server also accepts RDMA clients (init_ibv).
std::unique_ptr<rpc_server> start_bench_server(
    const std::string& listen, int threads, bool pin, bool coalesce, std::string& error,
    const ibv_config* rdma = nullptr, const tls_config* tls = nullptr, bool metrics = true,
    std::chrono::microseconds busy_poll = {},
    std::chrono::microseconds adaptive_poll = io_pool::default_adaptive_poll);

}  // namespace corvid::bench
