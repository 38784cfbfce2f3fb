#pragma once
// The server's shared state: handler table, reactors, acceptor, connection registry, stop.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "corvid/detail/handler_invoker.hpp"
#include "corvid/protocol/health.hpp"
#include "corvid/runtime/io_pool.hpp"
#include "corvid/runtime/tls_config.hpp"
#include "corvid/server/reflection.hpp"
#include "corvid/server/server_config.hpp"

#include "../admin/admin_host.hpp"
#include "../admin/admin_listener.hpp"
#include "../admission/shared_slots.hpp"
#include "../memory/server_memory.hpp"
#include "../metrics/server_metrics.hpp"
#include "../metrics/snapshot.hpp"
#include "../runtime/asio_all.hpp"
#include "../runtime/stats_counters.hpp"
#include "interceptor_chain.hpp"
#include "method_limit.hpp"
#include "worker_pool.hpp"

namespace corvid::rdma {
class rdma_context;
}
namespace corvid::discovery {
class server_presence;
}

namespace asio::ssl {
class context;
}

namespace corvid::detail {

class server_connection;

// What a TLS connection starts with: the settings and the context built from their files.
struct server_tls {
  tls_config config;
  std::shared_ptr<asio::ssl::context> context;
};

struct handler_entry {
  std::string name;
  void* object;
  invoke_fn invoke;
  bool blocking = false;  // runs on the worker pool (register_blocking_handler)
  bool stream = false;    // a streaming function (its calls open streams)
  // set_method_limit; null = unlimited. Its refused() counts the calls the limit refused.
  std::unique_ptr<method_limit> limit;
  std::size_t index = 0;  // registration order: the method's slot in the metrics shards
};

class server_core : public admin::admin_host {
 public:
  explicit server_core(server_config cfg)
      : config(std::move(cfg)),
        memory(config),
        pre_auth(
            shared_slots::make(config.max_pre_auth_connections, config.max_pre_auth_per_peer)) {}
  ~server_core() override;

  // Records `describe` for reflection once list_handlers() was called.
  void add_handler(std::uint32_t id, std::string_view name, void* object, invoke_fn fn,
                   describe_fn describe, bool blocking, bool stream);
  // Before start (std::logic_error otherwise).
  template <class I>
  void add_interceptor(std::shared_ptr<I> i) {
    std::lock_guard lk(mutex_);
    if (started_) throw std::logic_error("corvid: add_interceptor after start()");
    interceptors.add(std::move(i));
  }
  // Reflection lists the handlers registered from now on: rpc_server's constructor calls it
  // after registering its built-in methods, with server_config::reflection.
  void list_handlers();
  // Before start; the function must be registered. Throws std::logic_error otherwise.
  void set_method_limit(std::uint32_t id, std::string_view name, std::size_t max_concurrent);
  // The worker pool blocking handlers run on; null unless one is registered and started.
  worker_pool* workers() const noexcept { return workers_.get(); }
  // Queues a started blocking call in its connection's `lane`, or answers it server_busy
  // (false). `light`: its connection has almost nothing queued (it may take the reserve).
  bool submit_blocking(blocking_job& job, blocking_lane& lane, reply_sink& sink,
                       std::uint64_t request_id, bool light);
  // Immutable once started, so reactors read it without locks: a lock taken per request
  // by every reactor would serialise them.
  const handler_entry* find(std::uint32_t id) const noexcept {
    auto it = handlers_.find(id);
    return it == handlers_.end() ? nullptr : &it->second;
  }

  rpc_error async_start();
  void begin_stop();
  // Blocks until the stop has drained, then joins the reactors. Not on a reactor thread.
  void wait_stopped();
  bool on_own_thread() const noexcept {
    return (pool_ && pool_->owns_current_thread()) || (workers_ && workers_->owns_current_thread());
  }

  void on_connection_closed(server_connection* c);
  // Coroutine and blocking handlers running (or queued) on any connection. stop() returns only once
  // this is zero: handlers may use objects the user destroys right after stop().
  void handler_started() noexcept;
  void handler_finished() noexcept;

  const server_config config;
  // Declared before the reactors and connections: they are destroyed first.
  server_memory memory;
  // The built-in health method's state (protocol/health.hpp): its watches run on the
  // connections, which end first.
  health_service health;
  interceptor_chain interceptors;  // fixed at start; read by every reactor without a lock
  // The reflection method's handler list (server_config::reflection; empty without it).
  reflection_service reflection;
  // Places for connections in pre-authentication (server_connection::enter_pre_auth).
  std::shared_ptr<shared_slots> pre_auth;
  std::uint16_t bound_port = 0;
  stats_counters stats;
  std::shared_ptr<rdma::rdma_context> rdma;  // set by init_ibv(), before start
  // The registration (src/discovery/server_presence.hpp); set by rpc_server.
  std::shared_ptr<discovery::server_presence> presence;
  std::size_t connection_count() const;
  bool started() const;
  rpc_error init_tls(tls_config config);
  rpc_error reload_tls();
  // Null when TLS is off. Read once per accepted connection.
  std::shared_ptr<const server_tls> tls() const;

  // Metrics (server_config::metrics): created at start, one shard per reactor; null when off.
  std::unique_ptr<metrics::server_metrics> metrics;
  std::size_t reactor_index(const asio::io_context& reactor) const noexcept;
  // Reactor threads serving connections (io_threads), stated in every pong; 0 before start.
  std::uint32_t reactor_count() const noexcept {
    return pool_ ? static_cast<std::uint32_t>(pool_->size()) : 0;
  }
  bool stopping() const override;
  // Sums the shards and lists the connections (server_snapshot.cpp). Any thread.
  metrics::server_snapshot metrics_snapshot() const override;
  // The admin side's host (admin::admin_host, server_snapshot.cpp).
  const server_config& admin_config() const noexcept override { return config; }
  server_memory& admin_memory() noexcept override { return memory; }
  shared_slots& rpc_port_admin_sessions() noexcept override { return *admin_sessions; }
  // HTTP admin sessions on the RPC port (http_admin); admin_address has a pool of its own.
  const std::shared_ptr<shared_slots> admin_sessions =
      shared_slots::make(admin::max_admin_sessions, admin::max_admin_sessions_per_peer);
  std::uint16_t admin_port() const noexcept;  // server_config::admin_address's bound port

 private:
  void accept_next();
  void force_close_all();
  // Creates the worker pool when a blocking handler is registered (blocking_calls.cpp).
  rpc_error start_workers();

  std::unordered_map<std::uint32_t, handler_entry> handlers_;
  std::unique_ptr<worker_pool> workers_;  // before pool_: the reactors go first
  std::unique_ptr<io_pool> pool_;
  std::optional<asio::basic_socket_acceptor<asio::generic::stream_protocol>> acceptor_;
  std::string unix_path_;  // the socket file to remove at stop, for unix: endpoints
  std::optional<asio::steady_timer> accept_retry_;
  std::optional<asio::steady_timer> drain_timer_;
  std::unique_ptr<admin::admin_listener> admin_;  // server_config::admin_address

  mutable std::mutex mutex_;  // guards everything below; never taken per request
  std::condition_variable drained_cv_;
  std::unordered_map<server_connection*, std::shared_ptr<server_connection>> connections_;
  bool started_ = false;
  bool stopping_ = false;
  bool drained_ = false;
  bool released_ = false;  // io objects released after the join
  bool list_handlers_ = false;
  std::size_t handlers_running_ = 0;
  mutable std::mutex tls_mutex_;
  std::shared_ptr<const server_tls> tls_;
};

}  // namespace corvid::detail
