#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "corvid/compression.hpp"
#include "corvid/memory/memory_limit.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/runtime/cpu_budget.hpp"
#include "corvid/trace/span.hpp"

namespace corvid {

class client_metrics;  // corvid/client/client_metrics.hpp: set one to show it on /metrics

struct server_config {
  // Listen address: an IP ("0.0.0.0", "::") or "unix:/path/to.sock" for a Unix-domain socket.
  std::string address = "0.0.0.0";
  std::uint16_t port = 0;  // 0 = ephemeral; rpc_server::port() tells the bound one
  // Reactor threads. Default: the CPUs the process may use (usable_cpus(): its affinity mask
  // and cgroup CPU quota, rounded up), not the machine's core count.
  std::size_t io_threads = usable_cpus().threads();
  // Largest body + attachment accepted; a bigger frame is refused before any allocation.
  std::uint32_t max_frame_size = protocol::default_max_frame_size;
  // How long stop() waits for in-flight calls and open streams to finish before closing
  // connections anyway. (A connection with open streams reads their frames until they end,
  // refusing new calls with server_busy.)
  std::chrono::milliseconds stop_timeout{5000};
  // More connections than this (0 = unlimited) are refused: the extra connection receives a
  // server_busy error frame naming the limit, then is closed.
  std::size_t max_connections = 0;
  // A connection that sends nothing and has no call running for this long is closed
  // (0 = never).
  std::chrono::milliseconds idle_timeout{0};
  // A frame whose first byte has arrived must be complete within this, or the connection is
  // closed (slowloris defence; 0 = no limit). Generous by default: a 64 MiB frame at
  // 10 Mbit/s takes ~55 s.
  std::chrono::milliseconds frame_read_timeout{120'000};
  // Heartbeats (0 = off). With an interval, the server pings a connection it has heard
  // nothing from for that long; with a timeout, a connection it has heard nothing from (no
  // request, ping or pong) for that long is closed as dead — a half-open connection whose
  // peer vanished without a FIN or RST. Clients ping by default (client_config), so a
  // timeout alone detects dead clients; pings never count as activity for idle_timeout.
  std::chrono::milliseconds heartbeat_interval{0};
  std::chrono::milliseconds heartbeat_timeout{0};
  // Initial per-connection read buffer; it grows for big frames and shrinks back after.
  std::size_t read_buffer_size = 8 * 1024;
  // Memory (docs/architecture.md, "Memory"): what the server may hold in read buffers,
  // running calls and queued replies together, in bytes or as a share of RAM. At the limit it
  // stops reading from sockets (TCP flow control pushes back on clients) until memory frees.
  // Its last sixteenth is kept for connections holding under a 256th of it, so a few peers
  // that fill the server cannot stall a client making small calls.
  corvid::memory_limit max_memory = corvid::memory_limit::share_of_ram(0.25);
  // Share of max_memory read buffers may take, so reading can never starve running calls.
  double read_buffer_share = 0.5;
  // Pre-authentication: a connection on a TLS or http_admin server is in it from accept
  // until its first byte (and, for TLS, until its handshake completes): its state (about
  // 100 KiB for a TLS handshake) is charged to a budget of pre_auth_share of max_memory,
  // which never takes the fair reserve established clients keep. At most
  // max_pre_auth_connections are in it at once, at most max_pre_auth_per_peer from one
  // address (an IPv6 /64); more are closed at once. It lasts at most
  // tls_config::handshake_timeout (TLS) or frame_read_timeout, and ends the moment the peer
  // resets or closes.
  double pre_auth_share = 0.125;
  std::size_t max_pre_auth_connections = 1024;
  std::size_t max_pre_auth_per_peer = 64;
  // A connection with this many reply bytes queued (its client sends but does not read)
  // dispatches and reads nothing more until its writes drain; other connections are
  // unaffected. The reply that crosses the cap is still queued (one frame of overshoot at
  // most); a reply produced once the cap is reached is answered server_busy instead.
  std::size_t max_queued_reply_bytes = 16u << 20;
  // Calls one connection may have running at once (coroutine handlers that have not
  // finished). At the cap the server reads nothing more from that connection until one
  // finishes: pipelined requests wait in the kernel, and TCP pushes back on the client.
  std::size_t max_calls_per_connection = 1024;
  // Streams one connection may have open at once (0 = unlimited; they also count as calls
  // above). One more is refused at once with server_busy naming this limit: unlike a call,
  // a stream may last indefinitely, so waiting for a slot could wait forever.
  std::size_t max_streams_per_connection = 512;
  // A stream on which nothing moves either way for this long (no item, no credit, no end:
  // a client that stopped reading or writing, or a handler that stopped producing) is ended:
  // the client gets `timeout`, the handler is cancelled (0 = never). Seen within a quarter
  // of it more. A stream that waits on purpose (a subscription with rare events) needs a
  // longer one, or items of its own now and then.
  std::chrono::milliseconds stream_idle_timeout{300'000};
  // Bytes of items a client may write ahead on one stream (the credit the server grants it),
  // and so what the server holds per stream at most (charged to the running calls' memory).
  std::size_t stream_window = 256 * 1024;
  // How far that window grows by itself, while a stream's handler keeps up with its client
  // and the window is what holds the stream back (client_config::max_stream_window says
  // when; set it to stream_window to keep the window fixed). The items stay charged to the
  // memory limits above, which push back on the client as before.
  std::size_t max_stream_window = 4u << 20;
  // Call metadata a request may carry (docs/protocol.md, "Call metadata"): entries, and
  // bytes of its block. A request over either is refused resource_exhausted before its
  // handler runs; its bytes were charged with the frame, like its arguments.
  std::size_t max_metadata_entries = 64;
  std::size_t max_metadata_bytes = 8192;
  // Bytes one connection's running calls may hold: their request copies, decoded arguments
  // and call state (coroutine frames estimated). A request that could never fit is answered
  // message_too_large; otherwise the connection waits like at the server's limit.
  std::size_t max_call_bytes_per_connection = 256u << 20;
  // A connection whose queued replies make no progress for this long (its client stopped
  // reading) is closed and its memory freed (0 = never). While other connections wait for
  // memory, a connection whose replies have not moved for a tenth of this (at most 1 s) is
  // closed at once: a peer that does not read cannot hold the server's memory hostage.
  std::chrono::milliseconds write_timeout{15'000};
  // At the limit, answer new requests with server_busy instead of waiting for memory (a
  // frame that does not fit the read buffer still waits: it cannot be read without memory).
  bool busy_at_memory_limit = false;
  // Write coalescing: replies queued while a write is in flight leave together in one
  // gather write. Off = one frame per write syscall (the baseline the benchmark compares).
  bool coalesce_writes = true;
  // Per-message zstd (corvid/compression.hpp): on by default, it compresses only for clients
  // that ask (client_config::compression). Compressed requests are accepted either way.
  compression_config compression{.enabled = true};
  // Blocking handlers (rpc_server::register_blocking_handler) run on this many worker
  // threads, created at start only if such a handler is registered. Calls waiting for a
  // worker queue in front of them, up to worker_queue_length calls and worker_queue_bytes of
  // their requests and decoded arguments (a call always fits an empty queue); past either,
  // a call is answered server_busy. The bytes are also charged to the connection's in_flight
  // memory, like a coroutine call's. Default: usable_cpus().threads(), as io_threads.
  std::size_t worker_threads = usable_cpus().threads();
  std::size_t worker_queue_length = 1024;
  std::size_t worker_queue_bytes = 64u << 20;
  // Latency mode (0 = off): each reactor spins on its sockets for up to this long after its
  // last event before sleeping, so a request arriving meanwhile is seen without a thread
  // wake-up. Costs a busy core per reactor while traffic flows (docs/benchmarks.md).
  std::chrono::microseconds busy_poll{0};
  // Adaptive polling (0 = off): while requests keep arriving within this long of a reactor
  // going idle, it polls for them instead of sleeping, for a budget it learns, up to this
  // long; once they come further apart it sleeps as before. Default: io_pool::
  // default_adaptive_poll (100 us), less when a cgroup CPU quota gives the default reactors
  // less than a whole CPU each (cpu_budget::adaptive_poll). Clients: the io_pool they run on
  // decides (the default pool follows the same rule; an io_pool made with adaptive_poll 0
  // does not poll).
  std::chrono::microseconds adaptive_poll = usable_cpus().adaptive_poll();
  // Runs on each reactor thread as it starts (index 0..io_threads-1), e.g. to pin it to a core.
  std::function<void(std::size_t)> on_thread_start;

  // Answer corvid::reflection_service::describe (server/reflection.hpp): the schema of every
  // handler registered, as describe_schema<F...>() writes it, for tools such as
  // `corvid list`. Off by default, as in gRPC: it tells any client the whole API. An ordinary
  // handler otherwise: the same admission, limits and metrics as any call.
  bool reflection = false;

  // Metrics and the admin pages (README "Operating corvid"). Per-method call counts, errors,
  // latency histograms and bytes, recorded by each reactor into its own shard.
  bool metrics = true;
  // Serve HTTP/1.1 GET /metrics, /status, /connections and /health on the RPC port itself:
  // a connection whose first bytes are "GET " or "HEAD " is an admin request, not corvid.
  bool http_admin = false;
  // The same admin pages on an address of their own, e.g. "127.0.0.1:9100" (port 0 =
  // ephemeral, rpc_server::admin_port() tells it); empty = none.
  std::string admin_address;
  // Who may read the admin pages (both http_admin's and admin_address's). Non-empty: every
  // request must carry "Authorization: Bearer <token>", or is answered 401.
  std::string admin_bearer_token;
  // Only peers with a client certificate the server verified (rpc_server::init_tls with
  // ca_file) may read them; others are answered 403. The admin_address listener then speaks
  // TLS with the server's context (HTTPS); http_admin's plaintext requests on the RPC port
  // are refused. rpc_server::start fails when no admin page could ever be served (no
  // admin_address, or TLS without ca_file).
  bool admin_require_client_certificate = false;
  // Trace context (W3C traceparent, carried per call: docs/protocol.md): called with the
  // server span of every call that arrived with one, as it ends (span.hpp). Empty = no
  // export; handlers still see request_context::trace() and propagate it.
  span_exporter on_span;
  // Client metrics shown after the server's own on /metrics and in metrics_text(): a service
  // that calls other services passes the object its clients, pools or balancers report into
  // (client_config::metrics), so one scrape shows both sides. Null = none.
  std::shared_ptr<corvid::client_metrics> client_metrics;

  // Service discovery (README "Many servers"). With a registry, the server registers while
  // it serves: a lease of registry_ttl and the key <prefix>/<instance_id> whose value (JSON)
  // gives advertise_address, registry_weight, the reactor count and the protocol version;
  // load_balancer::open() on the same URL follows it. stop() deletes the key and revokes the
  // lease, then waits drain_delay, before it drains. A registry out of reach never stops the
  // server: it retries with back-off (state on /status, /metrics and in the log).
  std::string registry;  // "etcd://host:port/prefix"; empty = no registration
  // What clients should dial; empty = the listen address and bound port (the host's name
  // for a wildcard address).
  std::string advertise_address;
  std::chrono::seconds registry_ttl{10};
  unsigned registry_weight = 1;
  std::string instance_id;  // the key's last part and the ring position; empty = random
  // Also when no registry is set but a balancer follows the server's health (a health watch
  // is open when stop() begins): it stops routing here within that time.
  std::chrono::milliseconds drain_delay{500};
};

}  // namespace corvid
