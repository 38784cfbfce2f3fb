#pragma once
// The client's side of one socket. The socket, read buffer and timer belong to one reactor;
// callers on any thread queue requests under `mutex_`, held for the few instructions that
// encode a frame into the shared outbound queue and register the call.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <asio/generic/stream_protocol.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include "corvid/client/call_state.hpp"
#include "corvid/client/client_config.hpp"
#include "corvid/codec/sink.hpp"
#include "corvid/detail/byte_buffer.hpp"
#include "corvid/detail/outbound_queue.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/runtime/transport_stats.hpp"

namespace corvid::rdma {
class rdma_context;
class rdma_stream;
}  // namespace corvid::rdma

namespace corvid::detail {

// A request the connection had no room for (client_config caps, when_busy == wait): encoded
// apart, header filled in (with its request id) when it is admitted to the send queue.
struct parked_request {
  call_base* call = nullptr;
  protocol::frame_header header;
  std::string frame;          // header room, body and a copied attachment
  std::string_view borrowed;  // or the caller's attachment (zero copy)
  parked_request* next = nullptr;
};

class client_connection : public std::enable_shared_from_this<client_connection>,
                          public call_canceller {
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
  // Calls sent or queued and not yet ended.
  std::size_t pending_calls() const {
    std::lock_guard lk(mutex_);
    return slots_.size() - free_slots_.size();
  }
  // Fails every pending call with connection_closed and closes the socket. Any thread.
  void close(std::string reason);
  bool is_open() const;
  asio::io_context& reactor() noexcept { return reactor_; }
  // call_canceller: ends the call with `cancelled` and sends the server a cancel frame.
  void cancel(call_base* call) override;

  // Queues one request; `encode_body(sink)` appends the encoded arguments. Any thread.
  // Takes over one reference to `call`; the call completes with a reply or an error. At a
  // cap (client_config) the request is encoded into a parked_request of its own and waits.
  template <class Encode>
  void submit(call_base* call, std::uint32_t function_id, std::uint16_t signature,
              std::string_view attachment, std::chrono::milliseconds timeout,
              Encode&& encode_body) {
    std::unique_lock lk(mutex_);
    if (!open_) {
      reject(lk, call, rpc_error::unsent(rpc_errc::connection_closed, closed_reason_or_default()));
      return;
    }
    if (parked_head_ != nullptr || !has_room_locked(attachment.size())) {  // FIFO: none overtakes
      if (config_.when_busy == client_config::busy_policy::fail) {
        reject(lk, call,
               rpc_error::unsent(rpc_errc::client_busy,
                                 "client at its limit of calls in flight or queued bytes"));
        return;
      }
      std::unique_ptr<parked_request> p;
      std::size_t body = 0;
      try {
        p = std::make_unique<parked_request>();
        p->frame.resize(protocol::header_size);
        codec::string_sink sink(p->frame);
        encode_body(sink);
        body = p->frame.size() - protocol::header_size;
        if (body + attachment.size() <= config_.max_frame_size) {
          if (borrows(attachment.size())) {
            p->borrowed = attachment;
          } else {
            p->frame.append(attachment);
          }
        }
      } catch (...) {  // bad_alloc
        reject(lk, call, {rpc_errc::message_too_large, "out of memory encoding request"});
        return;
      }
      if (body + attachment.size() > config_.max_frame_size) {
        reject(lk, call, too_large(body + attachment.size()));
        return;
      }
      p->header.function_id = function_id;
      p->header.signature = signature;
      p->header.body_length = static_cast<std::uint32_t>(body);
      p->header.attachment_length = static_cast<std::uint32_t>(attachment.size());
      park_locked(call, std::move(p), timeout);
      const bool rearm = call->timed && deadline_head_ == call;
      lk.unlock();
      after_submit(false, rearm);
      return;
    }
    const std::size_t mark = out_.mark();
    out_.extend(protocol::header_size);  // filled in below, once the lengths are known
    try {
      encode_body(out_);
    } catch (...) {  // bad_alloc
      out_.rollback(mark);
      reject(lk, call, {rpc_errc::message_too_large, "out of memory encoding request"});
      return;
    }
    const std::size_t body = out_.mark() - mark - protocol::header_size;
    if (body + attachment.size() > config_.max_frame_size) {
      out_.rollback(mark);
      reject(lk, call, too_large(body + attachment.size()));
      return;
    }
    if (borrows(attachment.size())) {
      append_borrowed_locked(call, attachment);
    } else {
      out_.append(attachment);
    }
    register_call(call, timeout);
    protocol::frame_header h;
    h.request_id = call->id;
    h.function_id = function_id;
    h.signature = signature;
    h.body_length = static_cast<std::uint32_t>(body);
    h.attachment_length = static_cast<std::uint32_t>(attachment.size());
    // The deadline travels with the request, so the server can skip work nobody awaits.
    h.timeout_ms = wire_timeout(timeout);
    protocol::encode_header(h, out_.at(mark));  // after encoding: the buffer may have moved
    out_.count_frame();
    const bool kick = schedule_flush_locked();
    const bool rearm = call->timed && deadline_head_ == call;
    lk.unlock();
    after_submit(kick, rearm);
  }

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
  // Under the caps? A request always fits an empty queue: a cap below one request's size
  // must not refuse it forever.
  bool has_room_locked(std::size_t bytes) const noexcept;
  void park_locked(call_base* call, std::unique_ptr<parked_request> p,
                   std::chrono::milliseconds timeout);
  // Moves parked requests that now fit into out_, first come first served; their callers
  // go to `admitted`, to be resumed (call_base::admit) once the lock is released.
  void admit_parked_locked(std::vector<call_base*>& admitted);
  parked_request* unpark_locked(call_base* call);
  void register_call(call_base* call, std::chrono::milliseconds timeout);  // under mutex_
  void assign_slot(call_base* call);                                       // under mutex_
  void add_deadline(call_base* call, std::chrono::milliseconds timeout);   // under mutex_
  call_base* take_call(std::uint64_t id);                                  // under mutex_
  void unlink_deadline(call_base* call);                                   // under mutex_
  bool schedule_flush_locked();
  void send_cancels_before_close();  // reactor thread, from close()
  // Appends a cancel/ping/pong frame to out_ (not counted as an RPC frame).
  void queue_control_locked(protocol::msg_type type, std::uint64_t id);
  void kick_flush();
  // After queueing or parking: flush, or (a write in flight) at least arm the timer for a
  // call whose deadline is now the earliest.
  void after_submit(bool kick, bool rearm);
  std::string closed_reason_or_default() const;

  void start_reading(std::uint64_t epoch);
  void on_read(std::uint64_t epoch, const std::error_code& ec, std::size_t n);
  bool process_frames();
  void flush();
  void start_write();  // sending_ holds the batch
  void on_write(std::uint64_t epoch, const std::error_code& ec, std::size_t n);
  void on_connected(std::uint64_t epoch);
  // TCP is up: exchange queue-pair addresses on it, then on_connected over RDMA.
  void rdma_handshake(std::uint64_t epoch, std::shared_ptr<rdma::rdma_context> ctx,
                      std::shared_ptr<bool> timed_out, std::string endpoint,
                      std::function<void(rpc_error)> done);
  void rearm_timer();
  void on_timer();
  void arm_heartbeat(std::uint64_t epoch);
  void on_heartbeat(std::uint64_t epoch);
  // Reactor thread: closes the socket and fails every pending call with `e`.
  void fail_all(rpc_error e);
  // Writes done (or abandoned): lets the calls in `pins` complete.
  void unpin(std::vector<call_base*>& pins);
  // After a call's result is stored: resume its caller, unless `deferred` (pinned).
  static void finish_call(call_base* call, bool deferred) noexcept;

  asio::io_context& reactor_;
  const client_config config_;

  // Reactor-thread state.
  asio::generic::stream_protocol::socket socket_;
  std::shared_ptr<rdma::rdma_stream> rdma_;  // set: the socket_ role goes to the queue pair
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer connect_timer_;
  asio::steady_timer deadline_timer_;
  asio::steady_timer heartbeat_timer_;
  std::chrono::steady_clock::time_point last_heard_{};  // last read, or a write the server drained
  std::chrono::steady_clock::time_point last_ping_{};
  std::chrono::steady_clock::time_point timer_armed_for_ =
      std::chrono::steady_clock::time_point::max();
  byte_buffer read_buf_;
  outbound_queue sending_;
  std::uint64_t epoch_ = 0;  // bumps on every (re)connect; stale handlers see a mismatch
  std::uint64_t write_calls_ = 0;
  stats_counters stats_;
  bool dispatching_ = false;
  std::size_t read_room_ = 4096;
  std::size_t largest_reply_ = 0;  // in the current read batch

  // Shared state, under mutex_.
  mutable std::mutex mutex_;
  bool open_ = false;
  bool writing_ = false;
  bool flush_scheduled_ = false;
  std::string closed_reason_;
  std::shared_ptr<rdma::rdma_context> rdma_ctx_;  // init_ibv()
  outbound_queue out_;
  std::vector<call_base*> pinned_out_;      // calls with borrowed bytes in out_
  std::vector<call_base*> pinned_sending_;  // ... in sending_ (swapped with out_ under mutex_)
  struct slot {
    call_base* call = nullptr;
    std::uint32_t generation = 1;
  };
  std::vector<slot> slots_;  // request id = generation << 32 | slot index
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t submit_seq_ = 0;        // seq of the last call registered
  std::uint64_t written_seq_ = 0;       // calls up to this seq were handed to a write
  call_base* deadline_head_ = nullptr;  // sorted by deadline, earliest first
  call_base* deadline_tail_ = nullptr;
  parked_request* parked_head_ = nullptr;  // waiting for room, oldest first
  parked_request* parked_tail_ = nullptr;
};

}  // namespace corvid::detail
