#pragma once
// One RDMA connection seen as a byte stream, so the connections' framing, dispatch and write
// coalescing run unchanged on top of it (they call it where they would call the socket).
//
// Receives: `recv_buffers` registered chunks stay posted. Each completion is copied into the
// pending read's buffer and the chunk is posted again at once, so the peer does not meet an
// empty receive queue (RNR). Bytes the reader has no room for wait in their chunk, which is
// re-posted once drained: a reader that stops reading pushes back on the sender like a full
// TCP window (RNR retries, forever by default).
//
// Sends: `send_window` chunks. A write copies its bytes into free chunks, at most one chunk
// per SEND (so copying the next piece overlaps the transfer of the previous), and completes
// as soon as its last piece is posted. While the window is full the write stays incomplete,
// so the connection's outbound queue collects the frames that follow and they leave merged
// in the next write. Pieces up to the inline threshold are posted inline.
//
// Completions are event-driven: the completion queue's fd is watched by the reactor.
// The TCP connection the handshake ran on stays open beside the queue pair: the peer closing
// it (or dying) ends the stream. Everything runs on the owning reactor's thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "../runtime/asio_all.hpp"
#include "../runtime/io_handler.hpp"
#include "chunk_pool.hpp"
#include "rdma_context.hpp"
#include "rdma_counters.hpp"
#include "stream_registry.hpp"

namespace corvid::rdma {

using detail::io_handler;

class rdma_stream : public std::enable_shared_from_this<rdma_stream> {
 public:
  // Creates the queue pair and completion queue, takes (recv_buffers + send_window) chunks
  // from the pool and posts the receives. Fails with server_busy when the pool is at its
  // watermark. On the reactor's thread.
  static expected<std::shared_ptr<rdma_stream>, rpc_error> create(std::shared_ptr<rdma_context> ctx,
                                                                  asio::io_context& reactor,
                                                                  rdma_counters* counters);
  rdma_stream(std::shared_ptr<rdma_context> ctx, asio::io_context& reactor,
              rdma_counters* counters);
  ~rdma_stream();
  rdma_stream(const rdma_stream&) = delete;
  rdma_stream& operator=(const rdma_stream&) = delete;

  verbs::endpoint_info local_info() const { return qp_->local_info(); }
  // The largest SEND this side accepts (its chunk size), told to the peer.
  std::size_t max_recv_message() const noexcept { return ctx_->config().chunk_size; }
  // Connects the queue pair to the peer's and starts handling completions.
  rpc_error connect(const verbs::endpoint_info& remote, std::size_t peer_max_message);
  // Takes over the handshake's TCP connection; it carries nothing more, and its closing
  // means the peer is gone. In setup (guard_setup), counts the connection against the
  // side channel's peer address: one past max_connections_in_setup_per_peer fails.
  // `was_tls`: the handshake ran over TLS, whose close_notify a peer may send before its
  // FIN; bytes then mean closing too (on a plain one they are a protocol error).
  void attach_side_channel(asio::generic::stream_protocol::socket socket, bool was_tls = false);
  // Accepting side, after connect(): the connection is in setup, holding `ticket`, until
  // its first completion. None within `timeout` fails the stream (setup_timeout), so the
  // owner closes it and its chunks go back to the pool.
  void guard_setup(std::unique_ptr<detail::shared_slots::ticket> ticket,
                   std::chrono::milliseconds timeout);
  // Connecting side, after connect(): an empty SEND, so that the accepting side sees its
  // first completion now rather than at the first call (which may be long in coming).
  rpc_error announce();

  // Like a socket's: completes with the bytes copied into [data, data + size), asio::error::eof
  // once the peer has closed and everything it sent was read, or the connection's error.
  void async_read_some(char* data, std::size_t size, io_handler handler);
  // Completes once every byte of `buffers` is posted (copied into registered chunks), with
  // the byte count; `*sends` grows by the SENDs it took.
  void async_write(const std::vector<asio::const_buffer>& buffers, std::uint64_t* sends,
                   io_handler handler);
  // Stops reading and writing (pending operations end with operation_aborted), lets posted
  // sends finish for up to a second, then releases everything and runs `closed`.
  void close(std::function<void()> closed = {});
  bool is_open() const noexcept { return !closed_; }
  // The reactor is being destroyed (stream_registry): hands over the handlers the stream
  // keeps, for the caller to destroy uncalled, as the reactor destroys a socket's.
  struct abandoned {
    io_handler read, write;
    std::function<void()> closed;
  };
  abandoned abandon() noexcept;
  std::uint32_t inline_limit() const noexcept { return inline_limit_; }

 private:
  struct received {
    std::uint32_t chunk;
    std::uint32_t offset;
    std::uint32_t length;
  };
  static constexpr std::uint64_t send_tag = std::uint64_t{1} << 32;

  rpc_error setup();
  void wait_cq();
  void on_cq_ready();
  void drain();
  void on_send_done(std::uint32_t slot);
  // Copies what fits of a receive into the pending read; keeps the rest as backlog.
  void deliver(std::uint32_t chunk, std::uint32_t length);
  std::size_t serve_backlog();
  void repost(std::uint32_t chunk);
  void pump_sends();
  void complete_read();
  void finish_write_if_done();
  void fail(std::error_code ec);
  void watch_side_channel();
  void on_side_channel_closed();
  void peer_lost();
  void end_setup();
  // Releases the queue pair and chunks; `trim_later`: arm the pool's idle trim on the
  // reactor (not from the destructor, which may run while the reactor is destroyed).
  void destroy(bool trim_later = true);

  std::shared_ptr<rdma_context> ctx_;
  asio::io_context& reactor_;
  stream_registry& registry_;
  // The owner's counters until it closes the stream; then the owner may go while the stream
  // still drains completions (lingering sends, a queue pair's late error), which count here.
  rdma_counters* counters_;
  rdma_counters after_close_;
  std::unique_ptr<verbs::completion_queue> cq_;
  std::unique_ptr<verbs::queue_pair> qp_;
  std::optional<asio::posix::stream_descriptor> cq_fd_;
  std::optional<asio::generic::stream_protocol::socket> side_;
  std::optional<asio::steady_timer> linger_;
  std::optional<asio::steady_timer> flush_timer_;  // flushed by the peer: await the side channel
  std::unique_ptr<detail::shared_slots::ticket> setup_ticket_;  // while in setup (guard_setup)
  std::optional<asio::steady_timer> setup_timer_;
  char side_byte_ = 0;
  bool side_was_tls_ = false;  // attach_side_channel
  std::vector<registered_chunk> recv_chunks_;
  std::vector<registered_chunk> send_chunks_;
  std::vector<verbs::work_completion> wcs_;

  // Receive side: chunks holding bytes the reader has not taken yet, oldest first.
  std::vector<received> backlog_;
  std::size_t backlog_head_ = 0;
  char* read_data_ = nullptr;
  std::size_t read_size_ = 0;
  std::size_t read_filled_ = 0;
  io_handler read_handler_;
  bool read_scheduled_ = false;  // a post to serve the backlog is on its way

  // Send side.
  std::vector<std::uint32_t> free_slots_;
  std::size_t max_send_ = 0;
  std::uint32_t inline_limit_ = 0;
  std::vector<asio::const_buffer> write_bufs_;
  std::size_t write_index_ = 0;   // current buffer
  std::size_t write_offset_ = 0;  // within it
  std::size_t write_left_ = 0;    // bytes not yet posted
  std::size_t write_total_ = 0;
  std::uint64_t* write_sends_ = nullptr;
  io_handler write_handler_;

  std::error_code error_;  // sticky: the stream's first failure
  bool connected_ = false;
  bool waiting_ = false;   // an async_wait on the completion fd is pending
  bool draining_ = false;  // inside drain(): handlers run at its end
  bool peer_closed_ = false;
  bool closed_ = false;
  bool destroyed_ = false;
  std::function<void()> on_closed_;
};

}  // namespace corvid::rdma
