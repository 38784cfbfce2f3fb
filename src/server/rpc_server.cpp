#include "corvid/server/rpc_server.hpp"

#include <cstdio>
#include <unistd.h>

#include "corvid/client/client_metrics.hpp"

#include "../admin/admin_auth.hpp"
#include "../admin/admin_listener.hpp"
#include "../discovery/server_presence.hpp"
#include "../metrics/prometheus_text.hpp"
#include "../rdma/rdma_context.hpp"
#include "../runtime/asio_all.hpp"
#include "../runtime/endpoint.hpp"
#include "../transport/tls_context.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"
#include <sys/stat.h>

namespace corvid {
namespace detail {

std::string describe_exception(std::exception_ptr e) {
  try {
    std::rethrow_exception(std::move(e));
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception (not derived from std::exception)";
  }
}

namespace {
std::string bad_arguments_message(std::string_view function, std::string_view why) {
  std::string m = "arguments do not match the parameters of ";
  m += function;
  m += " (";
  m += why;
  m += ")";
  return m;
}
}  // namespace

void refuse_arguments(reply_sink& sink, std::uint64_t request_id, std::string_view function,
                      codec::decode_errc ec, std::size_t budget) {
  if (ec == codec::decode_errc::over_budget) {
    sink.reply_error(
        request_id, rpc_errc::server_busy,
        bad_arguments_message(function,
                              "decoding them needs more memory than the server allows the "
                              "call (over " +
                                  std::to_string(budget) + " bytes)"));
  } else {
    sink.reply_error(request_id, rpc_errc::bad_request,
                     bad_arguments_message(function, codec::to_string(ec)));
  }
}

void refuse_arguments(reply_sink& sink, std::uint64_t request_id, std::string_view function,
                      std::exception_ptr error) {
  try {
    std::rethrow_exception(std::move(error));
  } catch (const std::bad_alloc&) {
    sink.reply_error(request_id, rpc_errc::server_busy,
                     bad_arguments_message(function, "out of memory while decoding them"));
  } catch (...) {  // a user type's hash, comparison or constructor threw
    sink.reply_error(request_id, rpc_errc::bad_request,
                     bad_arguments_message(function, describe_exception(std::current_exception())));
  }
}

void refuse_signature(reply_sink& sink, std::uint64_t request_id, std::string_view function,
                      std::uint16_t caller, std::uint16_t handler) {
  char fingerprints[96];
  std::snprintf(fingerprints, sizeof fingerprints,
                ": the caller's signature fingerprint is 0x%04x, the server's 0x%04x",
                static_cast<unsigned>(caller), static_cast<unsigned>(handler));
  sink.reply_error(
      request_id, rpc_errc::signature_mismatch,
      std::string(function) + " has other parameter or result types here" + fingerprints);
}

server_core::~server_core() {
  begin_stop();
  wait_stopped();
}

void server_core::add_handler(std::uint32_t id, std::string_view name, void* object, invoke_fn fn,
                              describe_fn describe, bool blocking, bool stream) {
  std::lock_guard lk(mutex_);
  if (started_) throw std::logic_error("corvid: register_handler after start()");
  auto [it, inserted] = handlers_.try_emplace(
      id,
      handler_entry{std::string(name), object, fn, blocking, stream, nullptr, handlers_.size()});
  if (!inserted) {
    throw std::logic_error(it->second.name == name
                               ? "corvid: handler registered twice: " + std::string(name)
                               : "corvid: function id collision between " + it->second.name +
                                     " and " + std::string(name));
  }
  if (list_handlers_) reflection.describers_.push_back(describe);
}

void server_core::list_handlers() {
  std::lock_guard lk(mutex_);
  list_handlers_ = true;
}

rpc_error server_core::async_start() {
  {
    const auto t = tls();
    if (auto e = admin::check_admin_settings(config, t != nullptr,
                                             t != nullptr && !t->config.ca_file.empty())) {
      return e;
    }
  }
  {
    std::lock_guard lk(mutex_);
    if (started_) return {rpc_errc::invalid_argument, "server already started"};
    started_ = true;
  }
  if (auto ec = start_workers()) {
    std::lock_guard lk(mutex_);
    stopping_ = drained_ = true;
    return ec;
  }
  pool_ = std::make_unique<io_pool>(config.io_threads, config.on_thread_start, config.busy_poll,
                                    config.adaptive_poll);
  if (config.metrics) {
    std::vector<std::string> names(handlers_.size());
    for (const auto& [id, entry] : handlers_) names[entry.index] = entry.name;
    metrics = std::make_unique<metrics::server_metrics>(std::move(names), pool_->size());
  }
  std::error_code ec;
  asio::generic::stream_protocol::endpoint ep;
  if (is_unix_endpoint(config.address)) {
    ep = unix_endpoint(config.address);
    unix_path_ = config.address.substr(unix_prefix.size());
    // A socket file left by a previous run would make bind fail; remove only sockets.
    struct stat st {};
    if (::lstat(unix_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(unix_path_.c_str());
  } else {
    auto address = asio::ip::make_address(config.address, ec);
    if (ec) {
      {
        std::lock_guard lk(mutex_);
        stopping_ = drained_ = true;
      }
      pool_->stop();
      return {rpc_errc::invalid_argument, "bad listen address '" + config.address + "'"};
    }
    ep = asio::ip::tcp::endpoint(address, config.port);
  }
  acceptor_.emplace(pool_->at(0));
  acceptor_->open(ep.protocol(), ec);
  if (!ec && !is_unix_endpoint(config.address)) {
    acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) acceptor_->bind(ep, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::string msg = "cannot listen on " + config.address + ":" + std::to_string(config.port) +
                      ": " + ec.message();
    acceptor_.reset();
    {
      std::lock_guard lk(mutex_);
      stopping_ = drained_ = true;
    }
    pool_->stop();
    return {rpc_errc::connect_failed, std::move(msg)};
  }
  bound_port = port_of(acceptor_->local_endpoint());
  if (!config.admin_address.empty()) {
    admin_ = std::make_unique<admin::admin_listener>(*this, pool_->at(0));
    if (auto err = admin_->listen(config.admin_address)) {
      admin_.reset();
      acceptor_.reset();
      {
        std::lock_guard lk(mutex_);
        stopping_ = drained_ = true;
      }
      pool_->stop();
      return err;
    }
    if (config.admin_require_client_certificate) {  // HTTPS (check_admin_settings)
      admin_->serve_tls([this] {
        auto t = tls();
        return t ? t->context : nullptr;
      });
    }
    asio::post(pool_->at(0), [this] { admin_->start(); });
  }
  accept_retry_.emplace(pool_->at(0));
  drain_timer_.emplace(pool_->at(0));
  asio::post(pool_->at(0), [this] { accept_next(); });
  return {};
}

void server_core::accept_next() {
  acceptor_->async_accept(pool_->next(), [this](const std::error_code& ec,
                                                asio::generic::stream_protocol::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (ec) {
      // Out of descriptors or a transient failure: back off briefly instead of spinning.
      accept_retry_->expires_after(std::chrono::milliseconds(10));
      accept_retry_->async_wait([this](const std::error_code& e) {
        if (!e) accept_next();
      });
      return;
    }
    std::error_code ignored;
    socket.set_option(asio::ip::tcp::no_delay(true), ignored);  // fails on unix sockets
    const auto peer = socket.remote_endpoint(ignored);
    auto conn = std::make_shared<server_connection>(
        *this, std::move(socket), ignored ? std::string("unknown") : to_string(peer));
    bool over_limit;
    {
      std::lock_guard lk(mutex_);
      if (stopping_) return;  // the socket closes as `conn` goes away
      over_limit = config.max_connections != 0 && connections_.size() >= config.max_connections;
      connections_.emplace(conn.get(), conn);
    }
    if (over_limit) {
      asio::post(conn->reactor(), [conn, limit = config.max_connections] {
        conn->refuse("server at its connection limit (" + std::to_string(limit) + ")");
      });
    } else {
      asio::post(conn->reactor(), [conn] { conn->start(); });
    }
    accept_next();
  });
}

void server_core::begin_stop() {
  std::vector<std::shared_ptr<server_connection>> snapshot;
  {
    std::lock_guard lk(mutex_);
    if (!started_) {
      started_ = stopping_ = drained_ = true;  // never started: nothing to drain
      return;
    }
    if (stopping_) return;
    stopping_ = true;
    for (auto& [ptr, conn] : connections_) snapshot.push_back(conn);
    if (connections_.empty()) drained_ = true;
    drained_cv_.notify_all();
  }
  asio::post(pool_->at(0), [this] {
    std::error_code ignored;
    acceptor_->close(ignored);
    accept_retry_->cancel();
    if (admin_) admin_->close();
    drain_timer_->expires_after(config.stop_timeout);
    drain_timer_->async_wait([this](const std::error_code& e) {
      if (!e) force_close_all();
    });
  });
  for (auto& conn : snapshot) asio::post(conn->reactor(), [conn] { conn->begin_drain(); });
}

void server_core::force_close_all() {
  std::vector<std::shared_ptr<server_connection>> snapshot;
  {
    std::lock_guard lk(mutex_);
    for (auto& [ptr, conn] : connections_) snapshot.push_back(conn);
  }
  for (auto& conn : snapshot) asio::post(conn->reactor(), [conn] { conn->force_close(); });
}

void server_core::on_connection_closed(server_connection* c) {
  std::shared_ptr<server_connection> last_ref;  // released outside the lock
  std::lock_guard lk(mutex_);
  auto it = connections_.find(c);
  if (it == connections_.end()) return;
  last_ref = std::move(it->second);
  connections_.erase(it);
  if (stopping_ && connections_.empty()) {
    drained_ = true;
    drained_cv_.notify_all();
  }
}

void server_core::handler_started() noexcept {
  std::lock_guard lk(mutex_);
  ++handlers_running_;
}

void server_core::handler_finished() noexcept {
  std::lock_guard lk(mutex_);
  if (--handlers_running_ == 0 && stopping_) drained_cv_.notify_all();
}

void server_core::wait_stopped() {
  {
    // Connections are closed by now or by the stop_timeout; handlers still running after
    // that answer into closed connections, but must finish before the reactors go away.
    std::unique_lock lk(mutex_);
    drained_cv_.wait(lk, [&] { return drained_ && handlers_running_ == 0; });
  }
  // No call is queued or running any more (each counts as a running handler): the workers
  // are idle, and their last replies have been posted.
  if (workers_) workers_->stop();
  if (pool_) {
    pool_->stop();  // serialised: a concurrent caller returns only once the threads are joined
    // The reactors are joined; release their io objects once, whoever gets here first.
    std::lock_guard lk(mutex_);
    if (released_) return;
    released_ = true;
    drain_timer_.reset();
    accept_retry_.reset();
    acceptor_.reset();
    admin_.reset();
    connections_.clear();
    if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
  }
}

bool server_core::started() const {
  std::lock_guard lk(mutex_);
  return started_;
}

rpc_error server_core::init_tls(tls_config settings) {
  auto ctx = make_tls_context(settings, tls_role::server);
  if (!ctx) return std::move(ctx).error();
  auto next = std::make_shared<server_tls>(server_tls{std::move(settings), std::move(*ctx)});
  std::lock_guard lk(tls_mutex_);
  tls_ = std::move(next);
  return {};
}

rpc_error server_core::reload_tls() {
  const auto current = tls();
  if (!current) return {rpc_errc::invalid_argument, "reload_tls() before init_tls()"};
  return init_tls(current->config);
}

std::shared_ptr<const server_tls> server_core::tls() const {
  std::lock_guard lk(tls_mutex_);
  return tls_;
}

std::size_t server_core::reactor_index(const asio::io_context& reactor) const noexcept {
  for (std::size_t i = 0; i < pool_->size(); ++i) {
    if (&pool_->at(i) == &reactor) return i;
  }
  return 0;
}

std::uint16_t server_core::admin_port() const noexcept { return admin_ ? admin_->port() : 0; }

bool server_core::stopping() const {
  std::lock_guard lk(mutex_);
  return stopping_;
}

std::size_t server_core::connection_count() const {
  std::lock_guard lk(mutex_);
  return connections_.size();
}

}  // namespace detail

rpc_server::rpc_server(std::size_t io_threads, std::uint16_t port)
    : rpc_server([&] {
        server_config c;
        c.io_threads = io_threads;
        c.port = port;
        return c;
      }()) {}

rpc_server::rpc_server(server_config config)
    : core_(std::make_unique<detail::server_core>(std::move(config))) {
  core_->presence = std::make_shared<discovery::server_presence>();
  // Every corvid server answers the health method (protocol/health.hpp); the reflection
  // method only when asked (server/reflection.hpp). Neither is listed by reflection.
  register_handler<&health_service::check, &health_service::watch>(&core_->health);
  if (core_->config.reflection) {
    register_handler<&reflection_service::describe>(&core_->reflection);
    core_->list_handlers();
  }
}

namespace {

// Balancers first: health says draining and the registration goes; then, if a registry or
// a health watch could still send calls here, drain_delay passes while the server answers.
void announce_stop(detail::server_core& core, const server_config& config) {
  // Counted before the watches hear draining (and end).
  const bool followed = core.health.watchers() > 0;
  core.health.set(health_status::draining);
  core.presence->begin_stop(config, followed);
}

}  // namespace

rpc_server::~rpc_server() {
  // Deregister before the core drains (its destructor); never on the server's own threads.
  if (core_->started()) announce_stop(*core_, core_->config);
}

void rpc_server::set_serving(bool serving) {
  core_->health.set(serving ? health_status::serving : health_status::not_serving);
}

void rpc_server::add_handler(std::uint32_t id, std::string_view name, void* object,
                             detail::invoke_fn fn, detail::describe_fn describe, bool blocking,
                             bool stream) {
  core_->add_handler(id, name, object, fn, describe, blocking, stream);
}

void rpc_server::add_interceptor(std::shared_ptr<server_interceptor> interceptor) {
  core_->add_interceptor(std::move(interceptor));
}
void rpc_server::add_interceptor(std::shared_ptr<async_server_interceptor> interceptor) {
  core_->add_interceptor(std::move(interceptor));
}

namespace {
// add_interceptor(function): a function as a server_interceptor.
class function_interceptor final : public server_interceptor {
 public:
  explicit function_interceptor(std::function<call_verdict(const call_info&)> f)
      : f_(std::move(f)) {}
  call_verdict on_call(const call_info& call) override { return f_(call); }

 private:
  std::function<call_verdict(const call_info&)> f_;
};
}  // namespace

void rpc_server::add_interceptor(std::function<call_verdict(const call_info&)> check) {
  if (!check) throw std::invalid_argument("corvid: add_interceptor(empty function)");
  add_interceptor(std::make_shared<function_interceptor>(std::move(check)));
}

void rpc_server::set_method_limit(std::uint32_t id, std::string_view name,
                                  std::size_t max_concurrent) {
  core_->set_method_limit(id, name, max_concurrent);
}

std::uint64_t rpc_server::method_refusals(std::uint32_t id) const noexcept {
  const detail::handler_entry* e = core_->find(id);
  return e != nullptr && e->limit ? e->limit->refused() : 0;
}

rpc_error rpc_server::init_ibv(ibv_config config) {
  if (core_->started()) return {rpc_errc::invalid_argument, "init_ibv() after start()"};
  auto ctx = rdma::rdma_context::open(config);
  if (!ctx) return std::move(ctx).error();
  core_->rdma = std::move(*ctx);
  return {};
}

rpc_error rpc_server::init_tls(tls_config config) {
  if (core_->started()) return {rpc_errc::invalid_argument, "init_tls() after start()"};
  return core_->init_tls(std::move(config));
}

rpc_error rpc_server::reload_tls() { return core_->reload_tls(); }

rpc_error rpc_server::async_start() {
  if (auto e = discovery::server_presence::check(core_->config)) return e;
  if (auto e = core_->async_start()) return e;
  if (auto e = core_->presence->start(core_->config, core_->bound_port, core_->reactor_count())) {
    stop();
    return e;
  }
  return {};
}

rpc_error rpc_server::start() {
  if (!core_->started()) {
    if (auto ec = async_start()) return ec;
  }
  core_->wait_stopped();
  return {};
}

void rpc_server::stop() {
  // Balancers first: health says draining, the registration goes (and drain_delay passes)
  // while the server still answers. Inside a handler the wait is skipped, not the rest.
  if (core_->started()) {
    if (core_->on_own_thread()) {
      server_config no_delay;
      no_delay.drain_delay = std::chrono::milliseconds(0);
      announce_stop(*core_, no_delay);
    } else {
      announce_stop(*core_, core_->config);
    }
  }
  core_->begin_stop();
  if (!core_->on_own_thread()) core_->wait_stopped();
}

std::uint16_t rpc_server::port() const noexcept { return core_->bound_port; }
const server_config& rpc_server::config() const noexcept { return core_->config; }
std::size_t rpc_server::connection_count() const noexcept { return core_->connection_count(); }
transport_stats rpc_server::stats() const noexcept { return core_->stats.snapshot(); }
memory_usage rpc_server::memory() const { return core_->memory.server.snapshot(); }
void rpc_server::reset_memory_peak() noexcept { core_->memory.server.reset_peak(); }
std::uint16_t rpc_server::admin_port() const noexcept { return core_->admin_port(); }
std::string rpc_server::metrics_text() const {
  std::string text = metrics::prometheus_text(core_->metrics_snapshot());
  if (core_->config.client_metrics) text += core_->config.client_metrics->prometheus_text();
  return text;
}

}  // namespace corvid
