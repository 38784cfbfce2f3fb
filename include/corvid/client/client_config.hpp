#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "corvid/client/client_metrics.hpp"
#include "corvid/client/method_config.hpp"
#include "corvid/compression.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/runtime/tls_config.hpp"

namespace corvid {

class io_pool;
class client_interceptor;  // corvid/client/client_interceptor.hpp

struct client_config {
  std::chrono::milliseconds connect_timeout{5000};
  // Default deadline of call()/send_request(); 0 = none. call_for() overrides it per call.
  std::chrono::milliseconds request_timeout{30000};
  // Largest body + attachment sent or accepted.
  std::uint32_t max_frame_size = protocol::default_max_frame_size;
  // Reactors to run on; null = io_pool::default_pool().
  io_pool* pool = nullptr;
  // Latency mode (0 = off): the client's reactor pool (`pool`, or the default pool) spins on
  // its sockets for up to this long after its last event before sleeping, so a reply is seen
  // without a thread wake-up. Raises the pool's setting for every connection on it, and for
  // good: the pool keeps the largest budget any client asked for (io_pool::raise_busy_poll).
  std::chrono::microseconds busy_poll{0};
  // Requests queued while a write is in flight leave together in one gather write.
  // Off = one request per write syscall (the baseline the benchmark compares).
  bool coalesce_writes = true;
  // Request attachments at least this large are written from the caller's memory instead of
  // being copied (0 = always copy). The call then completes only after its bytes are written:
  // keep the attachment alive until the call is awaited (an async_reply dropped unawaited,
  // or a client closed, does not wait for the write that reads it).
  std::size_t zero_copy_threshold = 64 * 1024;
  // Per-message zstd (corvid/compression.hpp): off by default. On, every request says this
  // client accepts compressed replies and stream items; once a reply says the server accepts
  // them too, requests of at least min_bytes go compressed (when that makes them smaller).
  compression_config compression;
  // Bytes of items one stream's server may send ahead of this client's reading (its credit
  // window), and so what the client buffers per stream. The server starts every stream with
  // 256 KiB (about one bandwidth-delay product on loopback); a larger window is granted with
  // the request. Below 256 KiB counts as 256 KiB.
  std::size_t stream_window = 256 * 1024;
  // How far a stream's window grows by itself (at most this; set it to stream_window to keep
  // the window fixed). It doubles each time the window was what held the stream back: the
  // reader took the last item buffered while the server had no credit left, so it would wait
  // a round trip for nothing (items of 1 MiB need a window of two of them). A reader that is
  // behind, or a server that produces slowly, never grows it. It does not see a window below
  // a long link's bandwidth-delay product (its grants are still on the way when it runs dry):
  // set stream_window to that. What a stream buffers is bounded by its window:
  // a reader that kept up and then stops may find up to this much buffered per stream.
  std::size_t max_stream_window = 4u << 20;
  // Heartbeats (0 = off): after `heartbeat_interval` without hearing from the server the
  // client sends a ping; after `heartbeat_timeout` without hearing anything (reply, ping or
  // pong) the connection is closed as dead and its calls end with connection_closed — so a
  // half-open connection (peer vanished, no FIN or RST) is noticed even when idle.
  std::chrono::milliseconds heartbeat_interval{10'000};
  std::chrono::milliseconds heartbeat_timeout{30'000};
  // When a call times out or is cancelled, tell the server (a cancel frame), so a coroutine
  // handler still working on it is cancelled.
  bool send_cancel = true;
  // Ask the server's reactor (io thread) count at connect: a ping goes out first, and a
  // server that states it answers with a pong carrying it (rpc_client::server_reactors()).
  // Off by default, so a plain client's first bytes are its first request; client_pool turns
  // it on for its connections (it opens up to one connection per server reactor). Servers
  // that predate it answer a plain pong: the count stays 0 and nothing else changes.
  bool ask_server_reactors = false;
  // Client-side backpressure (0 = unlimited): calls in flight on this connection (sent or
  // queued for writing, no reply yet) and request bytes queued but not yet written (a
  // request always fits an empty queue, so the queue may pass the cap by one request).
  std::size_t max_pending_calls = 0;
  std::size_t max_queued_request_bytes = 64 * 1024 * 1024;
  // What a call past a cap does: wait (FIFO) until replies or writes make room, its own
  // deadline still running - send_request's co_await suspends, call's co_await waits
  // longer - or fail at once with client_busy. Calls that end while waiting (deadline, close)
  // are marked request_unsent(): the server never saw them.
  enum class busy_policy { wait, fail };
  busy_policy when_busy = busy_policy::wait;
  // TLS to the server (rpc_client::init_tls does the same for one client). Checked at the
  // first connect, which fails with invalid_argument naming a bad file.
  std::optional<tls_config> tls;
  // Call metrics (per method calls, errors, latency, bytes; connects) are counted into this
  // object, shared by any number of clients, pools and balancers; null = off. Off by default:
  // a client has no scrape endpoint of its own, so the counting would go unseen until the
  // application makes one and shows its prometheus_text() (server_config::client_metrics).
  std::shared_ptr<client_metrics> metrics;
  // Limits on the metadata a reply carries (call_options::reply_metadata): a block over
  // either, or malformed, ends its call with protocol_error (docs/protocol.md, "Call
  // metadata").
  std::size_t max_metadata_entries = 64;
  std::size_t max_metadata_bytes = 8192;  // the whole block, its 6-byte head included
  // Run in order on the calling thread before each request (unary calls and stream opens,
  // every attempt of a pool's or balancer's call) is encoded; each may edit the call's
  // metadata or fail the call locally (client_interceptor.hpp). Empty: no cost but a test.
  std::vector<std::shared_ptr<client_interceptor>> interceptors;
  // Per-method timeouts (method_config.hpp: a method, a namespace of methods or "*"), for the
  // unary calls given no timeout of their own (call(), send_request(), call_with() with a
  // negative call_options::timeout): the most specific entry's timeout wins over
  // request_timeout. A pool's connections take them from pool_config::client. The other
  // settings of an entry (idempotency, attempts, hedging) are load_balancer's
  // (lb_config::methods): one connection has no other endpoint to send a call to again.
  // Empty: no cost but a test.
  method_config methods;
};

}  // namespace corvid
