#include "corvid/client/rpc_client.hpp"

#include <charconv>

#include "corvid/runtime/io_pool.hpp"

#include "../rdma/rdma_context.hpp"
#include "../transport/tls_context.hpp"
#include "client_connection.hpp"

namespace corvid {
namespace {

// Splits "host:port" / "[v6]:port"; returns an error message on failure.
std::string split_endpoint(std::string_view ep, std::string& host, std::string& port) {
  const auto colon = ep.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == ep.size()) {
    return "endpoint '" + std::string(ep) + "' is not host:port";
  }
  std::string_view h = ep.substr(0, colon);
  std::string_view p = ep.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (h.empty() || ec != std::errc() || ptr != p.data() + p.size() || value == 0 || value > 65535) {
    return "endpoint '" + std::string(ep) + "' is not host:port";
  }
  host.assign(h);
  port.assign(p);
  return {};
}

// The client's pool, switched to busy-poll first if the client asks for it.
io_pool& reactors_for(const client_config& config) {
  io_pool& pool = config.pool != nullptr ? *config.pool : io_pool::default_pool();
  if (config.busy_poll.count() > 0) pool.raise_busy_poll(config.busy_poll);
  return pool;
}

}  // namespace

rpc_client::rpc_client() : rpc_client(client_config{}) {}

rpc_client::rpc_client(client_config config)
    : config_(config),
      extensions_(extensions_of(config_)),
      conn_(std::make_shared<detail::client_connection>(reactors_for(config).next(), config)) {}

rpc_client::rpc_client(client_config config, std::size_t reactor_index)
    : config_(config),
      extensions_(extensions_of(config_)),
      conn_(std::make_shared<detail::client_connection>(reactors_for(config).at(reactor_index),
                                                        config)) {}

rpc_client::~rpc_client() { conn_->close("client destroyed"); }

connect_awaiter rpc_client::connect(std::string_view endpoint) {
  if (endpoint.starts_with("unix:")) {
    return connect_awaiter(conn_, std::string(endpoint), "", rpc_error{});
  }
  std::string host, port;
  std::string error = split_endpoint(endpoint, host, port);
  return connect_awaiter(
      conn_, std::move(host), std::move(port),
      error.empty() ? rpc_error{} : rpc_error(rpc_errc::invalid_argument, std::move(error)));
}

rpc_error rpc_client::init_ibv(ibv_config config) {
  auto ctx = rdma::rdma_context::open(config);
  if (!ctx) return std::move(ctx).error();
  conn_->init_ibv(std::move(*ctx));
  return {};
}

rpc_error rpc_client::init_tls(tls_config config) {
  auto ctx = detail::make_tls_context(config, detail::tls_role::client);
  if (!ctx) return std::move(ctx).error();
  conn_->init_tls(std::move(*ctx), config.server_name);
  return {};
}

void rpc_client::close() { conn_->close("closed by the client"); }

bool rpc_client::is_connected() const { return conn_->is_open(); }

std::size_t rpc_client::pending_calls() const { return conn_->pending_calls(); }

std::size_t rpc_client::server_reactors() const noexcept { return conn_->server_reactors(); }

transport_stats rpc_client::stats() const noexcept { return conn_->stats(); }

std::weak_ptr<detail::call_canceller> rpc_client::canceller() const noexcept { return conn_; }
std::shared_ptr<detail::stream_sender> rpc_client::stream_sender() const noexcept { return conn_; }

void rpc_client::submit(detail::call_base* call, std::uint32_t function_id, std::string_view name,
                        std::uint16_t signature, std::string_view attachment,
                        std::chrono::milliseconds timeout, const detail::request_encoder& encode) {
  conn_->submit(call, function_id, name, signature, attachment, timeout, encode);
}

void rpc_client::submit_extended(detail::call_base* call, std::uint32_t function_id,
                                 std::string_view name, std::uint16_t signature,
                                 std::string_view attachment, std::chrono::milliseconds timeout,
                                 const detail::request_encoder& encode, const call_options& options,
                                 bool unary) {
  const corvid::metadata* metadata = options.metadata;
  if (options.reply_metadata != nullptr) call->set_reply_metadata(options.reply_metadata);
  bool compress = options.compress.value_or(true);
  if (unary && (extensions_ & with_methods) != 0) {
    const method_policy m = config_.methods.resolve(function_id, name);
    // method_config keeps timeouts at least 1 ms.
    if (timeout.count() < 0) timeout = m.timeout ? *m.timeout : config_.request_timeout;
    if (!options.compress) compress = m.compress.value_or(true);
  } else if (timeout.count() < 0) {
    timeout = config_.request_timeout;
  }
  if ((extensions_ & with_interceptors) == 0) {
    conn_->submit_with_metadata(call, function_id, name, signature, attachment, timeout, encode,
                                metadata, compress);
    return;
  }
  outgoing_call out(name, function_id);
  if (rpc_error e = detail::run_interceptors(config_.interceptors, out, metadata)) {
    fail_locally(call, std::move(e));
    return;
  }
  conn_->submit_with_metadata(call, function_id, name, signature, attachment, timeout, encode,
                              out.metadata().empty() ? nullptr : &out.metadata(), compress);
}

rpc_error detail::run_interceptors(
    const std::vector<std::shared_ptr<client_interceptor>>& interceptors, outgoing_call& call,
    const corvid::metadata* md) noexcept {
  try {
    if (md != nullptr) call.metadata() = *md;
    for (const auto& i : interceptors) {
      if (i == nullptr) continue;
      if (rpc_error e = i->on_call(call)) return e;
    }
    return {};
  } catch (const std::exception& e) {
    return {rpc_errc::internal, e.what()};
  } catch (...) {
    return {rpc_errc::internal, "a client interceptor threw"};
  }
}

void connect_awaiter::await_suspend(std::coroutine_handle<> h) {
  conn_->connect(host_, port_, [this, h, trace = detail::capture_trace()](rpc_error e) {
    result_ = std::move(e);
    detail::resume_traced(h, trace);
  });
}

}  // namespace corvid
