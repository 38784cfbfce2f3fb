#pragma once
// The client's side of one socket. The socket, read buffer and timer belong to one reactor;
// callers on any thread queue requests under `mutex_`, held for the few instructions that
// encode a frame into the shared outbound queue and register the call. Internal: rpc_client's
// header names it only by a forward declaration, so user code never sees asio's sockets.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "corvid/call_metadata.hpp"
#include "corvid/client/call_state.hpp"
#include "corvid/client/client_config.hpp"
#include "corvid/client/stream_call.hpp"
#include "corvid/detail/byte_buffer.hpp"
#include "corvid/detail/outbound_queue.hpp"
#include "corvid/detail/request_encoder.hpp"
#include "corvid/protocol/frame_header.hpp"

#include "../metrics/client_recorder.hpp"
#include "../runtime/asio_all.hpp"
#include "../runtime/stats_counters.hpp"
#include "../transport/frame_stream.hpp"
#include "call_table.hpp"
#include "deadline_list.hpp"
#include "parked_queue.hpp"

namespace corvid::rdma {
class rdma_context;
class rdma_stream;
}  // namespace corvid::rdma
namespace asio::ssl {
class context;
}

namespace corvid::detail {

class byte_stream;

class client_connection : public std::enable_shared_from_this<client_connection>,
                          public call_canceller,
                          public stream_sender {
 public:
  client_connection(asio::io_context& reactor, const client_config& config);
  ~client_connection();

  // Connects to host:port, or to a Unix-domain socket when host is "unix:/path" (port
  // ignored), replacing any current socket, whose calls fail. `done` runs on the reactor.
  void connect(std::string host, std::string port, std::function<void(rpc_error)> done);
  transport_stats stats() const noexcept { return stats_.snapshot(); }
  // Later connects run the RDMA handshake and carry the calls over a queue pair.
  void init_ibv(std::shared_ptr<rdma::rdma_context> ctx) {
    std::lock_guard lk(mutex_);
    rdma_ctx_ = std::move(ctx);
  }
  // Later connects run a TLS handshake, verifying the server against `server_name` (empty:
  // the host connected to).
  void init_tls(std::shared_ptr<asio::ssl::context> ctx, std::string server_name) {
    std::lock_guard lk(mutex_);
    tls_ctx_ = std::move(ctx);
    tls_server_name_ = std::move(server_name);
  }
  // Calls sent or queued and not yet ended. Any thread, without the mutex.
  std::size_t pending_calls() const noexcept { return calls_.size(); }
  // The reactor count the server stated in a pong (client_config::ask_server_reactors asks
  // at connect; heartbeat pongs carry it too); 0 until one arrives, and for servers that do
  // not state it. Any thread.
  std::uint32_t server_reactors() const noexcept {
    return server_reactors_.load(std::memory_order_relaxed);
  }
  // Fails every pending call with connection_closed and closes the socket. Any thread.
  void close(std::string reason);
  // Connected, and not yet known broken or closed. Any thread, without the mutex.
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }
  asio::io_context& reactor() noexcept { return reactor_; }
  // call_canceller: ends the call with `cancelled` and sends the server a cancel frame.
  void cancel(call_base* call) override;

  // stream_sender: a stream's frames after its request.
  rpc_error send_item(client_stream* s, const request_encoder& encode) override;
  void send_credit(client_stream* s, std::uint32_t bytes) noexcept override;
  void close_writes(client_stream* s) noexcept override;
  void cancel_stream(client_stream* s) noexcept override { cancel(s); }
  void resume_later(std::coroutine_handle<> h) noexcept override;

  // Queues one request; `encode` appends the encoded arguments. Any thread. Takes over one
  // reference to `call`; the call completes with a reply or an error. At a cap (client_config)
  // the request is encoded into a parked_request of its own and waits.
  // `name`: the function's qualified name, the metrics' method label.
  void submit(call_base* call, std::uint32_t function_id, std::string_view name,
              std::uint16_t signature, std::string_view attachment,
              std::chrono::milliseconds timeout, const request_encoder& encode);
  // submit() with the call metadata `md` (null or empty: none), encoded before this returns;
  // `compress` false: the request goes uncompressed whatever its size.
  void submit_with_metadata(call_base* call, std::uint32_t function_id, std::string_view name,
                            std::uint16_t signature, std::string_view attachment,
                            std::chrono::milliseconds timeout, const request_encoder& encode,
                            const metadata* md, bool compress = true);

 private:
  // Unlocks `lk` and ends `call` with `e` (dropping the connection's reference).
  static void reject(std::unique_lock<std::mutex>& lk, call_base* call, rpc_error e) noexcept;
  rpc_error too_large(std::size_t bytes) const;
  static std::uint32_t wire_timeout(std::chrono::milliseconds timeout) noexcept;
  // Attachments this large are written from the caller's memory (zero_copy_threshold).
  bool borrows(std::size_t attachment) const noexcept {
    return config_.zero_copy_threshold > 0 && attachment >= config_.zero_copy_threshold &&
           config_.coalesce_writes;
  }
  void append_borrowed_locked(call_base* call, std::string_view attachment);
  // A request of compress_from_ bytes or more, encoded at `mark` (`body` bytes) with its
  // attachment not yet queued: replaced by its compressed form when that is smaller. Then
  // `body` is the compressed body's length, `attachment` empty (it is inside), and the
  // result protocol::flag_compressed; else 0 and nothing changed.
  [[gnu::cold, gnu::noinline]] std::uint8_t compress_locked(std::size_t mark, std::size_t& body,
                                                            std::string_view& attachment);
  // A reply said the server accepts compressed requests (this client asked): from now on
  // requests of at least compression.min_bytes are compressed.
  [[gnu::cold]] void server_accepts_compressed();
  // The same for a parked request's frame (its header's room first, then its body, and
  // `attachment` not yet appended).
  [[gnu::cold, gnu::noinline]] bool compress_parked(parked_request& p, std::string_view attachment);
  // Under the caps? A request always fits an empty queue: a cap below one request's size
  // must not refuse it forever.
  bool has_room_locked(std::size_t bytes) const noexcept;
  void park_locked(call_base* call, std::unique_ptr<parked_request> p,
                   std::chrono::milliseconds timeout, std::chrono::steady_clock::time_point now);
  // Moves parked requests that now fit into pending_, first come first served; their callers
  // go to `admitted`, to be resumed (call_base::admit) once the lock is released.
  void admit_parked_locked(std::vector<call_base*>& admitted);
  // A stream's extra_credit, as a stream_credit frame right behind its request.
  void queue_extra_credit_locked(call_base* call) noexcept;
  // Under mutex_; `now`: the submission's clock reading (read if the call is timed).
  void register_call(call_base* call, std::chrono::milliseconds timeout,
                     std::chrono::steady_clock::time_point now);
  void file_call(call_base* call);  // under mutex_: in calls_, with the next seq
  void add_deadline(call_base* call, std::chrono::milliseconds timeout,
                    std::chrono::steady_clock::time_point now);  // under mutex_
  call_base* take_call(std::uint64_t id);                        // under mutex_
  bool schedule_flush_locked();
  void send_cancels_before_close();  // reactor thread, from close()
  // Appends a cancel/ping/pong frame to pending_ (not counted as an RPC frame).
  void queue_control_locked(const protocol::frame_header& h);
  // A stream's header-only frame (credit, end), if the stream is still filed.
  void queue_stream_control(client_stream* s, const protocol::frame_header& h);
  // A stream's item or credit frame, routed to the stream.
  void on_stream_frame(const protocol::frame_header& h, const char* body);
  void kick_flush();
  // After queueing or parking: flush, or (a write in flight) at least arm the timer for a
  // call whose deadline is now the earliest.
  void submit_impl(call_base* call, std::uint32_t function_id, std::string_view name,
                   std::uint16_t signature, std::string_view attachment,
                   std::chrono::milliseconds timeout, const request_encoder& encode,
                   const metadata* md, bool compress);
  void after_submit(bool kick, bool rearm);
  std::string closed_reason_or_default() const;
  bool open_locked() const noexcept { return open_.load(std::memory_order_relaxed); }

  void read_more(std::uint64_t epoch);
  void on_read(std::uint64_t epoch, const std::error_code& ec, std::size_t n);
  // A reply's metadata block, checked against client_config's limits: its entries, or the
  // protocol_error that ends its call.
  struct reply_metadata {
    metadata_view entries;
    rpc_error error;
  };
  // Reads the block at the front of `body` and drops it from `body`.
  reply_metadata read_reply_metadata(std::string_view& body) const;
  // Fills the call's call_options::reply_metadata; false: the call was ended with an error
  // instead (a bad block, or no memory for the copy).
  static bool deliver_reply_metadata(call_base& call, reply_metadata& md) noexcept;

  // This side's part in the frame stream's batch loop: replies complete their calls, pings
  // are answered.
  struct reply_role {
    client_connection& c;
    std::uint32_t max_frame_size() const noexcept;
    static bool accepts(protocol::msg_type t) noexcept {
      return t == protocol::msg_type::response || t == protocol::msg_type::ping ||
             t == protocol::msg_type::pong || t == protocol::msg_type::stream_item ||
             t == protocol::msg_type::stream_credit;
    }
    void on_bad_frame(const protocol::frame_header& h, protocol::header_errc e);
    void on_partial_frame(const protocol::frame_header& h);
    frame_verdict on_frame(const protocol::frame_header& h, const char* body);
    // A frame with a must-understand bit: refused if this build does not know one of them
    // (its call or stream ends with protocol_error), else handled as any other.
    [[gnu::noinline]] frame_verdict on_flagged_frame(const protocol::frame_header& h,
                                                     const char* body);
    // A frame whose bits are all understood: a response completes its call, the others go to
    // their stream or are answered (a ping).
    [[gnu::always_inline]] inline frame_verdict on_known_frame(const protocol::frame_header& h,
                                                               const char* body);
    // A response or stream frame without an unknown must-understand bit: completes its call.
    // `md`: the reply's metadata block, read (null: it has none; the common case, with the
    // tests on it folded away).
    [[gnu::always_inline]] inline frame_verdict complete(const protocol::frame_header& h,
                                                         std::string_view reply_body,
                                                         const char* attachment,
                                                         reply_metadata* md);
    // A compressed response or stream item (protocol::flag_compressed): inflated within
    // max_frame_size, then handled as the frame it stands for; one that does not inflate to
    // its declared size ends its call with protocol_error.
    [[gnu::noinline]] frame_verdict on_compressed_frame(const protocol::frame_header& h,
                                                        const char* body);
    // Ends the call or stream a response or stream frame `h` belongs to with `e` (a stream's
    // server is sent a cancel); other frames are dropped. The connection goes on.
    void fail_frame_call(const protocol::frame_header& h, rpc_error e);
    // A response carrying a metadata block (out of the common path).
    [[gnu::noinline]] frame_verdict complete_with_metadata(const protocol::frame_header& h,
                                                           const char* body);
  };
  void flush();
  void start_write();  // frames_.sending() holds the batch
  void on_write(std::uint64_t epoch, const std::error_code& ec, std::size_t n);
  void on_connected(std::uint64_t epoch);
  struct connect_attempt;
  // The socket is connected: TLS (init_tls / client_config::tls) and/or RDMA setup
  // (init_ibv, over TLS with both) runs on it next, else the connection is ready.
  void on_socket_connected(const std::shared_ptr<connect_attempt>& a, const std::error_code& ec,
                           std::string_view what);
  void tls_handshake(std::shared_ptr<connect_attempt> a);
  // TCP (and TLS, if on) is up: exchange queue-pair addresses on it, then on_connected
  // over RDMA.
  void rdma_handshake(std::shared_ptr<connect_attempt> a);
  // A handshake ended: false (and `done` told why) when the attempt was superseded or
  // timed out meanwhile.
  bool attempt_current(const connect_attempt& a, std::string_view stage);
  void rearm_timer();
  void on_timer();
  void arm_heartbeat(std::uint64_t epoch);
  void on_heartbeat(std::uint64_t epoch);
  // Reactor thread: closes the socket and fails every pending call with `e`.
  void fail_all(rpc_error e);
  // Every call the connection holds a reference to, taken out of its tables.
  struct held_calls {
    std::vector<call_base*> filed;       // sent or queued
    std::vector<call_base*> never_sent;  // pinned by bytes in pending_, unwritten
    std::vector<call_base*> parked;      // waiting for room: never queued
  };
  held_calls take_held(const rpc_error& e);
  // Ends what take_held() took with `e` (after unpin(never_sent)).
  void end_held(held_calls& held, const rpc_error& e);
  // Writes done (or abandoned): lets the calls in `pins` complete.
  void unpin(std::vector<call_base*>& pins);
  // After a call's result is stored: resume its caller, unless `deferred` (pinned).
  static void finish_call(call_base* call, bool deferred) noexcept;

  asio::io_context& reactor_;
  const client_config config_;

  // Reactor-thread state.
  // The bytes: a socket, TLS on it, or RDMA. A new one per connect; the read and write
  // handlers keep theirs alive (a TLS stream must outlive its operations).
  std::shared_ptr<byte_stream> stream_;
  // What a read or write handler holds of the stream: a TLS stream (its channel's socket
  // operations use it until they complete, even after a reconnect replaced it); nothing for
  // a socket or RDMA stream, which outlive their operations on their own (an RDMA stream
  // keeps its handlers inside it: holding it from them would be a cycle).
  std::shared_ptr<byte_stream> tls_keep() const;
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer connect_timer_;
  asio::steady_timer deadline_timer_;
  asio::steady_timer heartbeat_timer_;
  std::chrono::steady_clock::time_point timer_armed_for_ =
      std::chrono::steady_clock::time_point::max();
  frame_stream frames_;      // read buffer, the write in flight, heartbeat clock
  std::uint64_t epoch_ = 0;  // bumps on every (re)connect; stale handlers see a mismatch
  stats_counters stats_;
  bool dispatching_ = false;
  std::chrono::steady_clock::time_point read_at_{};  // the read being dispatched: its clock

  // Client metrics (client_config::metrics), written under mutex_.
  metrics::client_recorder metrics_;

  std::atomic<std::uint32_t> server_reactors_{0};  // server_reactors()
  // What every request's flags carry: flag_accepts_compressed with config_.compression on.
  const std::uint8_t request_flags_;
  std::string inflated_;  // a compressed reply's payload, while it is handled (reactor thread)

  // Shared state, under mutex_.
  mutable std::mutex mutex_;
  // Written under mutex_; atomic so that is_open() reads it without the mutex.
  std::atomic<bool> open_{false};
  bool writing_ = false;
  bool flush_scheduled_ = false;
  std::string closed_reason_;
  std::shared_ptr<rdma::rdma_context> rdma_ctx_;  // init_ibv()
  std::shared_ptr<asio::ssl::context> tls_ctx_;   // init_tls(), or built from config_.tls
  std::string tls_server_name_;
  outbound_queue pending_;                  // frames for the next write
  std::vector<call_base*> pinned_pending_;  // calls with borrowed bytes in pending_
  std::vector<call_base*> pinned_sending_;  // ... in frames_.sending() (swapped under mutex_)
  call_table calls_;                        // sent or queued, by request id (size(): any thread)
  std::uint64_t submit_seq_ = 0;            // seq of the last call registered
  std::uint64_t written_seq_ = 0;           // calls up to this seq were handed to a write
  deadline_list deadlines_;                 // timed calls, queued or parked
  parked_queue parked_;                     // waiting for room, oldest first
  // Requests this large are compressed: never, until a reply of this connection says the
  // server accepts compressed requests (then config_.compression.min_bytes).
  std::size_t compress_from_ = static_cast<std::size_t>(-1);
};

}  // namespace corvid::detail
