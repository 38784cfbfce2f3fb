#pragma once
// rpc_server: register functions, start, serve. The functions' own signatures are the schema.
//
//   corvid::rpc_server server(/*io threads*/ 2, /*port*/ 9000);
//   server.register_handler<echo, add>();          // free functions (plain or coroutine)
//   server.register_handler<&calc::mul>(&my_calc); // member functions, with their object
//   server.register_blocking_handler<query_db>();  // may block: runs on the worker pool
//   server.set_method_limit<query_db>(16);         // at most 16 running at once
//   server.start();                                // blocks until stop()
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "corvid/detail/blocking_invoker.hpp"
#include "corvid/detail/handler_invoker.hpp"
#include "corvid/detail/stream_invoker.hpp"
#include "corvid/error.hpp"
#include "corvid/export.hpp"
#include "corvid/memory/memory_usage.hpp"
#include "corvid/protocol/function_id.hpp"
#include "corvid/rdma/ibv_config.hpp"
#include "corvid/runtime/tls_config.hpp"
#include "corvid/runtime/transport_stats.hpp"
#include "corvid/server/interceptor.hpp"
#include "corvid/server/reflection.hpp"
#include "corvid/server/server_config.hpp"

namespace corvid {

namespace detail {
class server_core;
}

class CORVID_API rpc_server {
 public:
  rpc_server(std::size_t io_threads, std::uint16_t port);
  explicit rpc_server(server_config config);
  ~rpc_server();  // stops and joins; must not run on one of the server's own threads
  rpc_server(const rpc_server&) = delete;
  rpc_server& operator=(const rpc_server&) = delete;

  // Registers free functions (plain or returning corvid::task<T>). Only before start();
  // throws std::logic_error after start(), on a duplicate name or on a function-id collision:
  // programming errors, which the program's first run shows.
  template <auto... Fs>
  void register_handler() {
    (add_handler(protocol::function_id<Fs>(), protocol::function_name<Fs>(), nullptr,
                 detail::make_invoker<Fs>(), &detail::describe_function<Fs>, false,
                 detail::is_stream_function<Fs>),
     ...);
  }
  // Registers member functions called on `object`, which must outlive the server.
  template <auto... Fs, class C>
  void register_handler(C* object) {
    static_assert(
        (std::is_base_of_v<typename detail::function_traits<decltype(Fs)>::class_type, C> && ...),
        "register_handler(object): every function must be a member of the object's class");
    (add_handler(protocol::function_id<Fs>(), protocol::function_name<Fs>(),
                 static_cast<typename detail::function_traits<decltype(Fs)>::class_type*>(object),
                 detail::make_invoker<Fs>(), &detail::describe_function<Fs>, false,
                 detail::is_stream_function<Fs>),
     ...);
  }

  // Registers plain functions that may block their thread (a database call, a disk read):
  // they run on the server's worker threads (server_config::worker_threads), never on a
  // reactor, so other calls on the same reactor go on meanwhile. A bounded queue
  // (worker_queue_length, worker_queue_bytes) holds calls waiting for a worker; past it they
  // are answered server_busy. A call cancelled, or whose deadline passed, while it waited
  // never runs; a running one sees both through request_context::cancelled(). Same rules as
  // register_handler otherwise.
  template <auto... Fs>
  void register_blocking_handler() {
    (add_handler(protocol::function_id<Fs>(), protocol::function_name<Fs>(), nullptr,
                 detail::make_blocking_invoker<Fs>(), &detail::describe_function<Fs>, true),
     ...);
  }
  template <auto... Fs, class C>
  void register_blocking_handler(C* object) {
    static_assert(
        (std::is_base_of_v<typename detail::function_traits<decltype(Fs)>::class_type, C> && ...),
        "register_blocking_handler(object): every function must be a member of the object's "
        "class");
    (add_handler(protocol::function_id<Fs>(), protocol::function_name<Fs>(),
                 static_cast<typename detail::function_traits<decltype(Fs)>::class_type*>(object),
                 detail::make_blocking_invoker<Fs>(), &detail::describe_function<Fs>, true),
     ...);
  }
  // At most `max_concurrent` calls of F running at once over all connections (plain calls
  // while they run; coroutine and blocking calls from their start — queued for a worker
  // included — to their end). A call past it is answered server_busy at once, naming F and
  // the limit. After F is registered, before start(); throws std::logic_error otherwise, and
  // for a limit of 0 (it would refuse every call).
  template <auto F>
  void set_method_limit(std::size_t max_concurrent) {
    set_method_limit(protocol::function_id<F>(), protocol::function_name<F>(), max_concurrent);
  }
  // Interceptors (server/interceptor.hpp): run on every call, in the order added, after its
  // method is known and before its arguments are decoded; each may refuse it. Before
  // start(); std::logic_error after. A function is a synchronous interceptor.
  void add_interceptor(std::shared_ptr<server_interceptor> interceptor);
  void add_interceptor(std::shared_ptr<async_server_interceptor> interceptor);
  void add_interceptor(std::function<call_verdict(const call_info&)> check);
  // Calls of F refused by its set_method_limit since start.
  template <auto F>
  std::uint64_t method_refusals() const noexcept {
    return method_refusals(protocol::function_id<F>());
  }

  // Accept RDMA clients too: opens the verbs device and its registered-memory
  // pool. Before start(). TCP clients are still served on the same port. Errors:
  // no_rdma_device (no device, or the provider is not built in), invalid_argument.
  rpc_error init_ibv(ibv_config config = {});
  // Serve TLS (mutual TLS when config.ca_file is set): loads and checks the certificate,
  // key and CA files now. Before start(). Errors: invalid_argument naming the file or
  // setting and what OpenSSL said.
  rpc_error init_tls(tls_config config);
  // Loads the files init_tls named again (e.g. renewed certificates): new connections use
  // them, open ones keep theirs. Any time after init_tls; on an error the old ones stay.
  rpc_error reload_tls();

  // Binds and starts the reactors; returns once listening. Falsy on success.
  rpc_error async_start();
  // async_start() unless already started, then blocks until the server has stopped.
  // Returns the start error, if any.
  rpc_error start();
  // Graceful stop: the health method answers draining and a registration (server_config::
  // registry) is deleted, then drain_delay passes (with a registry, or while a balancer
  // watches the server's health); then no new connections, in-flight calls
  // finish (up to stop_timeout), replies are flushed, connections close. Safe from any thread,
  // including inside a handler (then it only begins the stop; start() or the destructor completes
  // it). Idempotent.
  void stop();

  // What the built-in health method (protocol/health.hpp) answers: serving, or not_serving
  // while false (balancers following its watch route elsewhere). stop() makes it draining.
  void set_serving(bool serving);

  // The bound port (after a successful start).
  std::uint16_t port() const noexcept;
  const server_config& config() const noexcept;
  // Connections currently open.
  std::size_t connection_count() const noexcept;
  // Frames, syscalls and bytes over all connections since start.
  transport_stats stats() const noexcept;
  // Memory the server holds now and at its peak, as a tree: read_buffers, queued_replies and
  // in_flight, each with one node per connection (docs/architecture.md, "Memory").
  memory_usage memory() const;
  // Starts a new peak (e.g. per benchmark cell) from what is held now.
  void reset_memory_peak() noexcept;
  // The metrics in the Prometheus text format (what GET /metrics answers with http_admin);
  // without server_config::metrics, only the server-wide ones; then server_config::
  // client_metrics' families, if set.
  std::string metrics_text() const;
  // The port server_config::admin_address listens on (0 without one).
  std::uint16_t admin_port() const noexcept;

 private:
  // `describe` writes the handler's schema, for reflection (server_config::reflection).
  void add_handler(std::uint32_t id, std::string_view name, void* object, detail::invoke_fn fn,
                   detail::describe_fn describe, bool blocking = false, bool stream = false);
  void set_method_limit(std::uint32_t id, std::string_view name, std::size_t max_concurrent);
  std::uint64_t method_refusals(std::uint32_t id) const noexcept;
  std::unique_ptr<detail::server_core> core_;
};

}  // namespace corvid
