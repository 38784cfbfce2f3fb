#pragma once
// rpc_client: one connection carrying many concurrent calls (pipelining). Safe to use from
// any number of coroutines and threads at once. Callers resume on the connection's reactor.
//
//   corvid::rpc_client client;
//   if (auto ec = co_await client.connect("127.0.0.1:9000")) { /* ec.message() */ }
//   auto r = co_await client.call<echo>("hello");        // expected<std::string, rpc_error>
//   auto p = co_await client.send_request<add>(1, 2);    // queued; await the reply later
//   auto s = co_await std::move(p);
#include <algorithm>
#include <chrono>
#include <coroutine>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "corvid/call_metadata.hpp"
#include "corvid/client/async_reply.hpp"
#include "corvid/client/client_config.hpp"
#include "corvid/client/client_interceptor.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/codec/sink.hpp"
#include "corvid/detail/function_traits.hpp"
#include "corvid/detail/outbound_queue.hpp"
#include "corvid/detail/request_encoder.hpp"
#include "corvid/export.hpp"
#include "corvid/protocol/function_id.hpp"
#include "corvid/protocol/signature.hpp"
#include "corvid/rdma/ibv_config.hpp"
#include "corvid/runtime/transport_stats.hpp"
#include "corvid/stream/stream_reader.hpp"
#include "corvid/stream/stream_writer.hpp"
#include "corvid/trace/trace_scope.hpp"

namespace corvid {

namespace detail {
class client_connection;  // src/client: the socket, its reactor and the pending calls
}

// Per-call options for send_request_with / call_with.
struct call_options {
  std::chrono::milliseconds timeout{-1};  // negative: the client's request_timeout; 0: none
  std::string_view attachment;            // raw bytes sent beside the arguments
  // The trace context the call carries (copied when it is made); null: the current one
  // (trace_scope.hpp), which inside a traced handler is its request_context::trace().
  const trace_context* trace = nullptr;
  // load_balancer with lb_policy::consistent_hash: the bytes that pick the endpoint (calls
  // with equal keys go to the same one while it is up and not overloaded); empty = no key.
  std::string_view hash_key{};
  // Metadata the request carries (docs/protocol.md, "Call metadata"); null or empty: none.
  // Read when the call starts (a client_pool call keeps a copy for a retry, a hedged call one
  // for its copies), so it need not outlive the start; a load_balancer call starts when it is
  // awaited.
  const corvid::metadata* metadata = nullptr;
  // Filled with the reply's metadata, if it carries any, before the caller resumes (left as
  // it was otherwise); must stay valid until the call ends. Null: a reply's metadata is
  // checked and skipped.
  corvid::metadata* reply_metadata = nullptr;
  // load_balancer: this call's hedging, over its method's (lb_config::methods); null: the
  // method's. Hedging a call (max_copies above 1) declares it safe to run more than once,
  // whatever its method's entry says; max_copies 1 turns its method's hedging off for it.
  const hedging_policy* hedging = nullptr;
  // This call's compression, over its method's (method_policy::compress): false = its request
  // goes uncompressed; true = as the connection allows (client_config::compression).
  std::optional<bool> compress{};
};

// What co_await stream<F>(...) and open_stream<F>(...) yield (for pools and balancers).
template <auto F>
using stream_reader_t = stream_reader<
    typename detail::owning<typename detail::function_traits<decltype(F)>::out_item>::type>;
template <auto F>
using open_stream_t = std::conditional_t<
    detail::function_traits<decltype(F)>::streams_out,
    duplex_stream<
        typename detail::function_traits<decltype(F)>::in_item,
        typename detail::owning<typename detail::function_traits<decltype(F)>::out_item>::type>,
    stream_writer<typename detail::function_traits<decltype(F)>::in_item,
                  detail::client_result_t<F>>>;

// The type send_request<F> yields, for storing pending replies (e.g. in a vector).
template <auto F>
using async_reply_t = async_reply<detail::call_state<detail::client_result_t<F>, false>>;
// ... and send_request_with<F> (its result carries the reply attachment).
template <auto F>
using async_reply_with_t = async_reply<detail::call_state<detail::client_result_t<F>, true>>;

// What stream<f>() and open_stream<f>() return: the stream, once its request is queued.
// A request parked at the client's caps (when_busy = wait) is waited for, so that what the
// caller does next (writes, close_writes) follows the request on the wire.
template <class T>
struct opened_stream {
  T value;
  detail::call_base* call = nullptr;  // kept alive by `value`; null: refused
  bool await_ready() const noexcept { return call == nullptr || call->admitted(); }
  bool await_suspend(std::coroutine_handle<> h) noexcept { return call->wait_admission(h); }
  T await_resume() { return std::move(value); }
};

class CORVID_API connect_awaiter {
 public:
  connect_awaiter(std::shared_ptr<detail::client_connection> conn, std::string host,
                  std::string port, rpc_error parse_error)
      : conn_(std::move(conn)),
        host_(std::move(host)),
        port_(std::move(port)),
        result_(std::move(parse_error)) {}
  bool await_ready() const noexcept { return static_cast<bool>(result_); }
  void await_suspend(std::coroutine_handle<> h);
  rpc_error await_resume() { return std::move(result_); }

 private:
  std::shared_ptr<detail::client_connection> conn_;
  std::string host_, port_;
  rpc_error result_;
};

class client_pool;

class CORVID_API rpc_client {
 public:
  rpc_client();
  explicit rpc_client(client_config config);
  ~rpc_client();  // pending calls end with connection_closed
  rpc_client(const rpc_client&) = delete;
  rpc_client& operator=(const rpc_client&) = delete;

  // "host:port", "[ipv6]:port" or "unix:/path". Awaits to an rpc_error, falsy on success;
  // never throws.
  // Connecting again replaces the connection (its pending calls end with connection_closed).
  connect_awaiter connect(std::string_view endpoint);
  // Connect over RDMA from now on: opens the verbs device and its registered-memory
  // pool; the next connect() exchanges queue-pair details over TCP, then every call travels
  // over the queue pair. Errors: no_rdma_device (no device, or the provider is not built in),
  // invalid_argument. Never falls back to TCP.
  rpc_error init_ibv(ibv_config config = {});
  // TLS to the server: the next connect() runs a TLS handshake that verifies the server's
  // chain (against config.ca_file, or the system's trust store) and name (config.server_name,
  // or the host connected to); config's certificate and key, when set, are presented for
  // mutual TLS. Files are checked now: invalid_argument names the one at fault.
  rpc_error init_tls(tls_config config);
  void close();
  bool is_connected() const;
  // Calls queued or sent on this connection that have not ended yet (what max_pending_calls
  // caps; calls still waiting for room are not among them).
  std::size_t pending_calls() const;
  // The server's reactor (io thread) count, as its pong stated it: after connect() when
  // client_config::ask_server_reactors is set (else only once a heartbeat's pong comes back).
  // 0 until then, and always for servers that predate it. Reset by each connect().
  std::size_t server_reactors() const noexcept;
  // Frames, syscalls and bytes on this client's connection (across reconnects).
  transport_stats stats() const noexcept;
  const client_config& config() const noexcept { return config_; }

  template <class State>
  using reply_t = typename State::result_type;

  // co_await: expected<R, rpc_error>, R the owning form of F's return type.
  template <auto F, class... Args>
  auto call(Args&&... args) {
    return reply_awaitable(start<F, false>(call_options{}, std::forward<Args>(args)...));
  }
  template <auto F, class Rep, class Period, class... Args>
  auto call_for(std::chrono::duration<Rep, Period> timeout, Args&&... args) {
    return reply_awaitable(
        start<F, false>(call_options{clamp(timeout), {}}, std::forward<Args>(args)...));
  }
  // co_await: expected<with_attachment<R>, rpc_error>. `attachment` must stay valid until
  // this returns (it is copied into the send queue).
  template <auto F, class... Args>
  auto call_with_attachment(std::string_view attachment, Args&&... args) {
    return reply_awaitable(start<F, true>(call_options{std::chrono::milliseconds(-1), attachment},
                                          std::forward<Args>(args)...));
  }
  template <auto F, class... Args>
  auto call_with(call_options options, Args&&... args) {
    return reply_awaitable(start<F, true>(options, std::forward<Args>(args)...));
  }
  // Queues the request; co_await yields an async_reply to await for the result. At a cap
  // (client_config::max_pending_calls, max_queued_request_bytes) co_await waits for room.
  template <auto F, class... Args>
  auto send_request(Args&&... args) {
    return queued_request(start<F, false>(call_options{}, std::forward<Args>(args)...),
                          canceller());
  }
  template <auto F, class... Args>
  auto send_request_with(call_options options, Args&&... args) {
    return queued_request(start<F, true>(options, std::forward<Args>(args)...), canceller());
  }

  // Streams (a handler returning corvid::stream<T>, or taking a trailing stream_reader<U>).
  // The request is queued at once; the server's errors (function_not_found, ...) end the
  // stream and reach next() / write() / finish(). No deadline unless call_options give one:
  // it then covers the whole stream.
  //
  // Server streaming: co_await yields expected<stream_reader<T>, rpc_error>.
  template <auto F, class... Args>
  auto stream(Args&&... args) {
    return stream_with<F>(call_options{std::chrono::milliseconds(0), {}},
                          std::forward<Args>(args)...);
  }
  template <auto F, class... Args>
  auto stream_with(call_options options, Args&&... args) {
    using traits = detail::function_traits<decltype(F)>;
    static_assert(traits::streams_out && !traits::streams_in,
                  "corvid: stream<f>() takes a handler returning corvid::stream<T> (and no "
                  "stream_reader parameter: use open_stream<f>() for that)");
    using reader = stream_reader<typename detail::owning<typename traits::out_item>::type>;
    auto opened = open<F>(options, std::forward<Args>(args)...);
    if (!opened) return opened_stream<expected<reader, rpc_error>>{unexpected(opened.error())};
    return opened_stream<expected<reader, rpc_error>>{reader(*opened), *opened};
  }
  // Client streaming (co_await yields expected<stream_writer<U, R>, rpc_error>) and
  // bidirectional streaming (expected<duplex_stream<U, T>, rpc_error>).
  template <auto F, class... Args>
  auto open_stream(Args&&... args) {
    return open_stream_with<F>(call_options{std::chrono::milliseconds(0), {}},
                               std::forward<Args>(args)...);
  }
  template <auto F, class... Args>
  auto open_stream_with(call_options options, Args&&... args) {
    using traits = detail::function_traits<decltype(F)>;
    static_assert(traits::streams_in,
                  "corvid: open_stream<f>() takes a handler whose last parameter is a "
                  "corvid::stream_reader<U> (use stream<f>() for server streaming)");
    using in = typename traits::in_item;
    using handle = std::conditional_t<
        traits::streams_out,
        duplex_stream<in, typename detail::owning<typename traits::out_item>::type>,
        stream_writer<in, detail::client_result_t<F>>>;
    auto opened = open<F>(options, std::forward<Args>(args)...);
    if (!opened) return opened_stream<expected<handle, rpc_error>>{unexpected(opened.error())};
    return opened_stream<expected<handle, rpc_error>>{handle(*opened), *opened};
  }

 private:
  friend class client_pool;
  // client_pool places each connection on the reactor its callers run on: reactor `index` of
  // the client's io_pool instead of the next one round-robin.
  rpc_client(client_config config, std::size_t reactor_index);
  std::weak_ptr<detail::call_canceller> canceller() const noexcept;
  std::shared_ptr<detail::stream_sender> stream_sender() const noexcept;

  // Encodes F's arguments and hands the call (one reference) to the connection. `Unary`: a
  // call (client_config::methods apply), not a stream's opening request.
  template <auto F, bool Unary, class... Args>
  void submit_encoded(detail::call_base* call, call_options options, Args&&... args) {
    using params = detail::wire_params_t<F>;
    const auto timeout = options.timeout.count() < 0 ? config_.request_timeout : options.timeout;
    auto encode = [&](auto& out) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (encode_arg<std::tuple_element_t<I, params>>(out, std::forward<Args>(args)), ...);
      }(std::index_sequence_for<Args...>{});
    };
    const trace_context* trace = options.trace != nullptr ? options.trace : current_trace();
    if (trace != nullptr && trace->valid()) [[unlikely]]
      call->set_trace(*trace);
    // A call with metadata either way, or on a client with interceptors or per-method
    // settings, takes the road out of line: one test here is all a plain call pays for them.
    constexpr std::uint8_t applies = Unary ? (with_interceptors | with_methods) : with_interceptors;
    if (((extensions_ & applies) != 0) | (options.metadata != nullptr) |
        (options.reply_metadata != nullptr) | options.compress.has_value()) [[unlikely]] {
      submit_extended(
          call, protocol::function_id<F>(), protocol::function_name_v<F>, protocol::signature_v<F>,
          options.attachment,
          Unary && options.timeout.count() < 0 ? std::chrono::milliseconds(-1) : timeout,
          detail::encoder_for(encode), options, Unary);
      return;
    }
    submit(call, protocol::function_id<F>(), protocol::function_name_v<F>, protocol::signature_v<F>,
           options.attachment, timeout, detail::encoder_for(encode));
  }
  // submit() for a call with metadata (options.metadata, reply_metadata), through the
  // client's interceptors, which edit a copy of the caller's metadata (encoded in its place)
  // or fail the call, or with per-method settings (`unary`: a call, not a stream's request)
  // or its own compression: `timeout` negative = none given, the method's or else
  // request_timeout applies.
  void submit_extended(detail::call_base* call, std::uint32_t function_id, std::string_view name,
                       std::uint16_t signature, std::string_view attachment,
                       std::chrono::milliseconds timeout, const detail::request_encoder& encode,
                       const call_options& options, bool unary);
  // Ends a call that was never handed to the connection (an interceptor refused it),
  // dropping the connection's reference.
  static void fail_locally(detail::call_base* call, rpc_error e) noexcept {
    call->set_error(std::move(e));
    call->complete();
    call->release();
  }

  // Queues a stream's request; the caller gets one reference to its state.
  template <auto F, class... Args>
  expected<detail::client_stream*, rpc_error> open(call_options options, Args&&... args) {
    using params = detail::wire_params_t<F>;
    static_assert(sizeof...(Args) == std::tuple_size_v<params>,
                  "corvid: wrong number of arguments for this RPC function");
    // The server starts with initial_stream_credit; a larger window is granted right after
    // the request (the connection queues the grant behind it, so the server knows the
    // stream by then, also when the request waited for room).
    const std::size_t window =
        std::clamp<std::size_t>(config_.stream_window, protocol::initial_stream_credit, UINT32_MAX);
    auto* s = new detail::client_stream(
        stream_sender(),
        std::is_same_v<
            typename detail::owning<typename detail::function_traits<decltype(F)>::out_item>::type,
            std::string>,
        window, std::min<std::size_t>(config_.max_stream_window, UINT32_MAX));
    s->add_ref();  // one reference for the connection, one for the caller
    submit_encoded<F, false>(s, options, std::forward<Args>(args)...);
    // Refused before it was filed (not connected, too large, client_busy): it has no id.
    // A stream that was filed may be done already too (a short stream can end on the
    // reactor before we look): that one is returned, its end is for next() to tell.
    if (s->done() && !s->filed()) {
      rpc_error e = s->end_error();
      s->release();
      return unexpected(std::move(e));
    }
    return s;
  }
  // Hands the call (one reference) and its encoded arguments to the connection.
  void submit(detail::call_base* call, std::uint32_t function_id, std::string_view name,
              std::uint16_t signature, std::string_view attachment,
              std::chrono::milliseconds timeout, const detail::request_encoder& encode);
  template <class Rep, class Period>
  static std::chrono::milliseconds clamp(std::chrono::duration<Rep, Period> d) {
    // Round up, and never to 0, which would mean "no deadline".
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(d);
    return ms.count() < 1 ? std::chrono::milliseconds(1) : ms;
  }

  // Encodes `arg` exactly as the parameter type P would be encoded, without building a P
  // when the bytes are the same (any string-like argument for a string parameter).
  template <class P, class A, class Out>
  static void encode_arg(Out& out, A&& arg) {
    using param = std::remove_cvref_t<P>;
    using given = std::remove_cvref_t<A>;
    if constexpr (std::is_same_v<param, given>) {
      codec::encode(out, arg);
    } else if constexpr ((std::is_same_v<param, std::string> ||
                          std::is_same_v<param, std::string_view>)&&std::
                             is_convertible_v<A&&, std::string_view>) {
      codec::encode(out, std::string_view(arg));
    } else {
      codec::encode(out, static_cast<param>(std::forward<A>(arg)));
    }
  }

  template <auto F, bool WithAttachment, class... Args>
  auto start(call_options options, Args&&... args) {
    using params = detail::wire_params_t<F>;
    static_assert(sizeof...(Args) == std::tuple_size_v<params>,
                  "corvid: wrong number of arguments for this RPC function");
    static_assert(
        []<std::size_t... I>(std::index_sequence<I...>) {
          return (std::is_constructible_v<std::remove_cvref_t<std::tuple_element_t<I, params>>,
                                          std::tuple_element_t<I, std::tuple<Args&&...>>> &&
                  ...);
        }(std::index_sequence_for<Args...>{}),
        "corvid: an argument does not convert to the RPC function's parameter type");
    using state = detail::call_state<detail::client_result_t<F>, WithAttachment>;
    auto* s = new state();
    s->add_ref();  // one reference for the connection, one for the caller
    submit_encoded<F, true>(s, options, std::forward<Args>(args)...);
    return detail::call_ref<state>(s);
  }

  client_config config_;
  // What of config_ a call must look at (fixed at construction): its interceptors, its
  // per-method settings.
  static constexpr std::uint8_t with_interceptors = 1, with_methods = 2;
  static std::uint8_t extensions_of(const client_config& c) noexcept {
    return static_cast<std::uint8_t>((c.interceptors.empty() ? 0 : with_interceptors) |
                                     (c.methods.empty() ? 0 : with_methods));
  }
  std::uint8_t extensions_ = 0;
  std::shared_ptr<detail::client_connection> conn_;
  std::weak_ptr<client_pool> pool_;  // the pool that made this connection, if one did
};

}  // namespace corvid
