#pragma once
// One accepted socket, owned by one reactor for its whole life: everything below runs on
// that reactor's thread, so nothing here is locked.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "corvid/detail/byte_buffer.hpp"
#include "corvid/detail/call_budget.hpp"
#include "corvid/detail/outbound_queue.hpp"
#include "corvid/detail/reply_sink.hpp"
#include "corvid/detail/stream_port.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/trace/trace_context.hpp"

#include "../admission/connection_admission.hpp"
#include "../admission/shared_slots.hpp"
#include "../memory/server_memory.hpp"
#include "../metrics/call_recorder.hpp"
#include "../runtime/asio_all.hpp"
#include "../stream/stream_mux.hpp"
#include "../transport/byte_stream.hpp"
#include "../transport/frame_stream.hpp"
#include "blocking_lane.hpp"
#include "connection_liveness.hpp"
#include "running_calls.hpp"

namespace corvid::rdma {
class rdma_stream;
}

namespace corvid::detail {

class server_core;
class method_limit;
struct handler_entry;
struct request_view;
struct server_tls;

// What handler templates see of it are three narrow interfaces (reply_sink, call_budget,
// stream_port), passed to each invoker separately. It is their only implementation, and final:
// its own calls of them, and those of code that knows the type, are direct calls.
class server_connection final : public reply_sink, public call_budget, public stream_port {
 public:
  server_connection(server_core& core, asio::generic::stream_protocol::socket socket,
                    std::string peer);

  void start();                     // begins reading
  void refuse(std::string reason);  // sends a server_busy error frame, then closes
  void refuse_with(rpc_errc code, std::string_view reason);
  void begin_drain();  // stop(): answer what is in flight, then close
  void force_close();  // stop() timed out

  // reply_sink (connection_replies.cpp)
  outbound_queue* begin_reply(std::uint64_t request_id, std::size_t frame_bytes) override;
  void end_reply(request_context* ctx) override;
  void reply_error(std::uint64_t request_id, rpc_errc code, std::string_view message) override;
  void span_ended(request_context& ctx) noexcept override;
  asio::io_context& reactor() noexcept override { return reactor_; }
  std::string peer_address() const override { return peer_; }

  // call_budget (connection_replies.cpp, blocking_calls.cpp)
  std::size_t call_allowance(std::size_t want) noexcept override { return mem_.allowance(want); }
  void charge_call(std::size_t bytes) noexcept override { mem_.charge_admitted(bytes); }
  void call_started(request_context& ctx) noexcept override;
  void call_finished(request_context& ctx) noexcept override;
  bool submit_blocking(blocking_job& job, std::uint64_t request_id) override;

  // stream_port (connection_streams.cpp)
  outbound_queue* begin_item(std::uint64_t request_id, std::size_t frame_bytes) override;
  void end_item(std::size_t owned_bytes) override;
  void send_credit(std::uint64_t request_id, std::uint32_t bytes) override;
  void wait_writable(stream_link* link) override { streams_.wait_writable(link); }
  void release_items(std::size_t cost) noexcept override { mem_.call_done(cost); }
  bool admit_stream(std::uint64_t request_id) override;
  void stream_closed() noexcept override { adm_.stream_closed(); }
  bool hold_item(std::size_t bytes) noexcept override { return adm_.hold(bytes); }
  void forget_writable(stream_link* link) noexcept override { streams_.forget_writable(link); }
  void wait_written(stream_link* link) override;
  std::size_t stream_window() const noexcept override { return streams_.window(); }
  std::size_t max_stream_window() const noexcept override { return streams_.max_window(); }
  std::size_t reserve_stream_growth(std::size_t bytes) noexcept override {
    return streams_.reserve_growth(bytes);
  }
  void release_stream_growth(std::size_t bytes) noexcept override {
    streams_.release_growth(bytes);
  }

  const metrics::connection_stats& metrics_connection() const noexcept {
    return metrics_.connection();
  }

 private:
  // TLS (rpc_server::init_tls): the first byte tells a TLS client from a plaintext one;
  // the handshake runs before the first read, off the hot path. With http_admin the same
  // peek tells an HTTP request ("GET ", "HEAD ") from a corvid client; `tls` may be null.
  void begin_tls(std::shared_ptr<const server_tls> tls);
  // Pre-authentication (server_config::pre_auth_share): a place from the server's pool (a
  // per-peer share) and its budget, until the first byte or the TLS handshake; false = none.
  bool enter_pre_auth(bool tls);
  // Its place and memory are given back (with `as_tls`, the session stays charged as an
  // established one's; false = no room for it).
  bool end_pre_auth(bool as_tls);
  // Takes the read buffer (charged first; without room it waits for read memory), then reads.
  void begin_reading();
  void on_first_byte(const std::shared_ptr<const server_tls>& tls);
  void handshake(std::shared_ptr<const server_tls> tls);
  void read_more();
  void on_read(const std::error_code& ec, std::size_t n);
  // Someone waits for memory: an idle connection's grown buffer shrinks back to
  // read_buffer_size (a socket read in flight on it is cancelled first, then reissued); one
  // grown for a frame that stopped arriving is closed (see stall_grace).
  void reclaim_read_buffer();
  void shrink_idle_read_buffer();
  // Dispatches every complete frame in the read buffer; returns false on a protocol error.
  // Stops early, leaving frames in the buffer, when a limit pauses the connection (memory,
  // calls in flight, queued replies); resume_dispatch() continues once it lifts.
  bool process_frames();
  // This side's part in the frame stream's batch loop: requests are admitted and
  // dispatched, control frames answered, an rdma_setup switches the transport.
  struct request_role {
    server_connection& c;
    std::uint32_t max_frame_size() const noexcept;
    static bool accepts(protocol::msg_type t) noexcept { return t != protocol::msg_type::response; }
    void on_bad_frame(const protocol::frame_header& h, protocol::header_errc e);
    void on_partial_frame(const protocol::frame_header& h);
    frame_verdict on_frame(const protocol::frame_header& h, const char* payload);
  };
  // The next frame is a request: whether it may be dispatched now. False = stop the batch
  // (paused, or the frame was refused and the stream cannot continue).
  bool admit_request(const protocol::frame_header& h, const char* payload, bool& ok);
  // Carries out admission's verdict on a request that did not pass the common checks:
  // dispatches, answers the refusal, fails the connection or pauses it (false).
  [[gnu::cold, gnu::noinline]] bool act_on(verdict v, const protocol::frame_header& h,
                                           const char* payload, const handler_entry* entry,
                                           bool& ok);
  // Stops reading until admission's reason lifts (and, for memory, registers the waiter).
  void pause_for(const verdict& v);
  // Makes room for the rest of a frame that has begun to arrive: grows the buffer with the
  // bytes received (at most about twice them), never to what the header merely claims.
  // Or waits for memory, or refuses the frame and skips its bytes as they come.
  void grow_for_frame(const protocol::frame_header& h);
  void dispatch(const protocol::frame_header& h, const char* payload, const handler_entry* entry);
  // Runs the handler's invoker on this connection, seen as each of its three interfaces.
  void invoke(const handler_entry& entry, const request_view& req);
  // A stream's item, end or credit frame: to its running stream call (dropped when the
  // stream has ended). An item is charged to the running calls' memory before it is
  // copied; false = no memory for it now (the batch pauses, like a request's).
  bool on_stream_frame(const protocol::frame_header& h, const char* payload);
  // Streams parked for room in the reply queue, told once it drains.
  void wake_writable();
  // dispatch for a method with a set_method_limit: refused at the limit, otherwise holds a
  // place in it until the call ends (handed to the call's context if it outlives dispatch).
  [[gnu::noinline]] void invoke_limited(const handler_entry& entry, const request_view& req);
  void resume_dispatch();
  // begin_reply when the reply credit is short (out of the hot path): gives unused call
  // credit back and tries again; false = refused, and the error reply saying why is queued.
  [[gnu::cold, gnu::noinline]] bool retry_reply(std::uint64_t request_id, std::size_t frame_bytes);
  // A client's rdma_setup frame: builds the queue pair and queues the answer; the
  // connection switches to RDMA once the answer is written (switch_to_rdma).
  void on_rdma_setup(const protocol::frame_header& h, const char* payload);
  void switch_to_rdma();
  // cancel, ping and pong frames.
  void on_control(const protocol::frame_header& h);
  void cancel_running(std::uint64_t request_id);
  void cancel_all_running();
  // The peer sends no more (FIN) or is gone: its running calls are cancelled.
  void on_peer_finished();
  void queue_control(const protocol::frame_header& h);  // a header-only frame (frames.hpp)
  // Sends an error frame, then closes once everything queued is written.
  void fail(std::uint64_t request_id, rpc_errc code, std::string_view message);
  void frame_queued();
  // Starts a write of what is queued, if none is in flight. `now`: the time, if the caller
  // has just read the clock (the write's stall clock starts there).
  void flush(std::chrono::steady_clock::time_point now = {});
  void write_each();
  void on_write(const std::error_code& ec, std::size_t n);
  void close_if_done();
  // Memory refused a read buffer or a call: stop reading until a release wakes us.
  void wait_for_memory(bool for_read, std::size_t need);
  void resume_after_memory();
  std::size_t queued_reply_bytes() const noexcept {
    return pending_.size() + frames_.sending().size();
  }
  void settle_replies() noexcept { mem_.settle_replies(queued_reply_bytes()); }
  // Replies its peer does not take while others wait for memory: closes this connection
  // when its writes have not moved for stall_grace(); otherwise checks again then. The same
  // grace applies to a frame granted memory whose bytes stop arriving.
  void reclaim_replies();
  void hold_replies();  // registers reclaim_replies with server_memory
  void recheck_at(std::chrono::steady_clock::time_point t);  // on_timer then, not later
  void close();
  // The metrics of the call `request_id` (the one being dispatched, or a running coroutine
  // call), or null (metrics off, or no such call).
  metrics::method_stats* call_metrics(std::uint64_t request_id) {
    metrics::method_stats* s = metrics_.dispatching(request_id);
    return s != nullptr || !metrics_.on() ? s : running_call_metrics(request_id);
  }
  metrics::method_stats* running_call_metrics(std::uint64_t request_id);
  // A request with must-understand flag bits: takes the trace context off its body
  // (protocol::flag_trace). False when a bit is unknown, or the body is too short for a trace
  // context: the request is answered bad_request, before anything else reads its body.
  [[gnu::cold, gnu::noinline]] bool read_flags(const protocol::frame_header& h, request_view& req);
  // The timer (only with a time limit configured): liveness says when and what it finds.
  connection_liveness::view liveness_view() const noexcept;
  bool paused() const noexcept { return adm_.paused(); }
  // Paused, the connection reads nothing, so it would not see its peer leave: it watches
  // the socket for an error (a reset) and its timer probes the peer (probe_interval).
  void watch_hangup();
  void end_idle_streams(std::chrono::steady_clock::time_point now);
  void arm_timer();
  void on_timer();

  server_core& core_;
  asio::io_context& reactor_;
  byte_stream stream_;  // TCP, Unix, TLS or RDMA
  std::string peer_;
  connection_admission adm_;  // before frames_: charged for its read buffer from the start
  connection_memory& mem_;    // adm_'s trackers (read buffer, replies, calls)
  frame_stream frames_;       // read buffer, the write in flight, heartbeat clock
  outbound_queue pending_;    // replies queued while a write is in flight
  // Bytes of a refused frame still to be discarded as they arrive (a frame that could never
  // fit the memory limit: answered message_too_large, then skipped, not stored).
  std::uint64_t skip_ = 0;
  std::chrono::steady_clock::time_point read_time_{};  // when the current batch arrived
  trace_context caller_trace_;               // the request being dispatched's, while it is
  std::optional<asio::steady_timer> timer_;  // only when a time limit is configured
  using time_point = std::chrono::steady_clock::time_point;
  connection_liveness live_;
  running_calls running_;               // coroutine calls in flight, by request id
  blocking_lane blocking_lane_;         // its blocking calls waiting for a worker (the pool's)
  method_limit* call_limit_ = nullptr;  // the limit invoke_limited holds for the call starting
  stream_mux streams_;  // streams waiting for queue room or for their lent items' writes
  std::size_t reply_mark_ = 0;
  std::uint64_t reply_id_ = 0;
  std::uint64_t batch_frames_ = 0;  // RPC frames taken by the batch being processed
  bool batch_requests_ = false;     // ... of which requests (activity, for idle_timeout)
  bool reply_open_ = false;
  bool dispatching_ = false;
  std::size_t batch_start_bytes_ = 0;  // pending_ when the batch began (for the turn budget)
  bool yielded_ = false;               // the batch spent its turn: frames wait, a post goes on
  bool yield_posted_ = false;          // ... and that post is queued
  bool writing_ = false;
  bool reading_ = false;
  bool holding_ = false;          // registered with server_memory::add_holder
  bool reclaim_pending_ = false;  // the read in flight was cancelled to shrink its buffer
  asio::cancellation_signal read_cancel_;
  bool holding_replies_ = false;  // registered with server_memory::add_holder for replies
  bool peer_finished_ = false;    // FIN from the peer: its running calls were cancelled
  bool error_watch_ = false;      // a wait_error op is on the socket (watch_hangup)
  bool served_request_ = false;   // a request was dispatched (rdma_setup is then refused)
  bool stop_reading_ = false;     // drain, peer EOF or protocol error: read nothing more
  bool draining_ = false;         // stop(): reading on only while streams are open
  bool closed_ = false;
  bool pre_auth_expired_ = false;  // the pre-authentication deadline closed the socket
  std::unique_ptr<shared_slots::ticket> pre_auth_;  // in pre-authentication: its place
  std::optional<asio::steady_timer> pre_auth_deadline_;
  // RDMA (init_ibv): the answered stream, which carries the bytes once the answer is written.
  std::shared_ptr<rdma::rdma_stream> rdma_next_;  // answered, switching after the write
  metrics::call_recorder metrics_;  // server_config::metrics: this connection's calls and bytes
};

}  // namespace corvid::detail
