#pragma once
// One accepted socket, owned by one reactor for its whole life: everything below runs on
// that reactor's thread, so nothing here is locked. The connection coordinates five owners:
// the read gate (reading and the phase of its life), the dispatcher (requests to handlers),
// the reply writer (replies out; its base, so that a reply is one virtual call), the watch
// (its timer) and the setup (pre-authentication, TLS, RDMA). Its own member functions, all in
// server_connection.cpp, are the loop that ties them together and the three interfaces handlers
// see.
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
#include "connection_setup.hpp"
#include "connection_watch.hpp"
#include "dispatcher.hpp"
#include "read_gate.hpp"
#include "reply_writer.hpp"
#include "running_calls.hpp"

namespace corvid::detail {

class server_core;
class method_limit;
struct handler_entry;
struct request_view;
struct server_tls;

// What handler templates see of it are three narrow interfaces (reply_sink, call_budget,
// stream_port), passed to each invoker separately. It is their only implementation, and final:
// its own calls of them, and those of code that knows the type, are direct calls.
class server_connection final : public reply_writer, public call_budget, public stream_port {
 public:
  server_connection(server_core& core, asio::generic::stream_protocol::socket socket,
                    std::string peer);

  void start();                     // begins reading
  void refuse(std::string reason);  // sends a server_busy error frame, then closes
  void refuse_with(rpc_errc code, std::string_view reason);
  void begin_drain();  // stop(): answer what is in flight, then close
  void force_close();  // stop() timed out

  // reply_sink: replies and errors are the reply writer's (its base).
  void span_ended(request_context& ctx) noexcept override;
  asio::io_context& reactor() noexcept override { return reactor_; }
  std::string peer_address() const override { return peer_; }
  // What the transport proved at setup (connection_setup for TLS, the constructor for a Unix
  // socket); an RDMA connection keeps what its TCP or TLS setup connection proved.
  const peer_identity& identity() const noexcept override {
    static const peer_identity none;  // plain TCP proves nothing
    return identity_ ? *identity_ : none;
  }

  // call_budget: admission's, with the running calls' index.
  std::size_t call_allowance(std::size_t want) noexcept override { return mem().allowance(want); }
  void charge_call(std::size_t bytes) noexcept override { mem().charge_admitted(bytes); }
  void call_started(request_context& ctx) noexcept override;
  void call_finished(request_context& ctx) noexcept override;
  bool submit_blocking(blocking_job& job, std::uint64_t request_id) override;

  // stream_port: the reply writer's and the stream mux's.
  outbound_queue* begin_item(std::uint64_t request_id, std::size_t frame_bytes) override {
    return writer().begin_item(request_id, frame_bytes);
  }
  void end_item(std::size_t owned_bytes) override { writer().end_item(owned_bytes); }
  void send_credit(std::uint64_t request_id, std::uint32_t bytes) override;
  void wait_writable(stream_link* link) override { streams_.wait_writable(link); }
  void release_items(std::size_t cost) noexcept override { mem().call_done(cost); }
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
  friend class reply_writer;
  friend class read_gate;
  friend class dispatcher;
  friend class connection_setup;
  friend class connection_watch;
  friend class call_check;

  std::shared_ptr<server_connection> self() {
    return std::static_pointer_cast<server_connection>(shared_from_this());
  }
  connection_memory& mem() noexcept { return adm_.memory(); }
  bool paused() const noexcept { return adm_.paused(); }
  reply_writer& writer() noexcept { return *this; }
  const reply_writer& writer() const noexcept { return *this; }

  // The connection's life, one read at a time: what arrived is acted on, the replies leave
  // in one write, and the next read goes out. Every pause (memory, calls, replies, the turn
  // budget) ends in resume(), which takes up the frames left in the buffer the same way.
  void on_read(const std::error_code& ec, std::size_t n);
  void resume();
  void run_batch();
  // Acts on every complete frame in the read buffer; false on a protocol error. Stops early,
  // leaving frames in the buffer, when a limit pauses the connection.
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
  // Stops reading until admission's reason lifts (and, for memory, registers the waiter).
  void pause_for(const verdict& v);
  // A stream's item, end or credit frame: to its running stream call (dropped when the
  // stream has ended). An item is charged to the running calls' memory before it is
  // copied; false = no memory for it now (the batch pauses, like a request's).
  bool on_stream_frame(const protocol::frame_header& h, const char* payload);
  // A compressed stream item (protocol::flag_compressed): charged at its declared size,
  // inflated, and given to its stream like any item. False: paused for memory.
  [[gnu::cold]] bool on_compressed_item(const protocol::frame_header& h, const char* payload,
                                        request_context& ctx, stream_link& link);
  // cancel, ping and pong frames.
  void on_control(const protocol::frame_header& h);
  void cancel_running(std::uint64_t request_id);
  void cancel_all_running();
  // The peer sends no more (FIN) or is gone: its running calls are cancelled.
  void on_peer_finished();
  // The write in flight is done: what waited on it goes on.
  void on_written();
  // Streams parked for room in the reply queue, told once it drains.
  void wake_writable();
  // Sends an error frame, then closes once everything queued is written.
  void fail(std::uint64_t request_id, rpc_errc code, std::string_view message);
  void close_if_done();
  void close();
  // The metrics of the call `request_id` (the one being dispatched, or a running coroutine
  // call), or null (metrics off, or no such call).
  metrics::method_stats* call_metrics(std::uint64_t request_id) {
    metrics::method_stats* s = metrics_.dispatching(request_id);
    return s != nullptr || !metrics_.on() ? s : running_call_metrics(request_id);
  }
  metrics::method_stats* running_call_metrics(std::uint64_t request_id);

  server_core& core_;
  asio::io_context& reactor_;
  byte_stream stream_;  // TCP, Unix, TLS or RDMA
  std::string peer_;
  // Set once, before the first request is read; only where the transport proves something
  // (a Unix socket, TLS): plain TCP connections, most of a server's, go without its bytes.
  std::unique_ptr<peer_identity> identity_;
  connection_admission adm_;  // before frames_: charged for its read buffer from the start
  frame_stream frames_;       // read buffer, the write in flight, heartbeat clock
  running_calls running_;     // coroutine calls in flight, by request id
  stream_mux streams_;        // streams waiting for queue room or for their lent items' writes
  metrics::call_recorder metrics_;  // server_config::metrics: this connection's calls and bytes
  read_gate gate_;                  // reading, and the phase of the connection's life
  dispatcher dispatch_;             // requests to handlers
  connection_watch watch_;          // its timer: time limits, heartbeats, probes
  connection_setup setup_;          // pre-authentication, TLS, the switch to RDMA
};

}  // namespace corvid::detail
