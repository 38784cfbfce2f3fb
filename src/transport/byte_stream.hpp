#pragma once
// A connection's bytes, whatever carries them: a TCP or Unix-domain socket, TLS on that
// socket, or an RDMA queue pair (whose TCP socket then only tells when the peer leaves).
// The connections frame, dispatch and coalesce on top of it without knowing which; each
// operation switches on the kind once (no virtual call on the hot path).
//
// What a transport cannot do is decided here, in one place:
// - A read in flight can be cancelled (to shrink an idle buffer) only on a plain socket:
//   a TLS read may be half-way through a record, and an RDMA read has no cancel.
// - The kernel's send queue, the peer's FIN seen by poll() and the socket's error watch
//   exist only while a socket carries the bytes (not once RDMA has taken over).
// - A blocking write (the one-frame-per-write baseline) is not offered on RDMA.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "corvid/detail/buffer_range.hpp"
#include "corvid/detail/recycled_handler.hpp"

#include "../rdma/rdma_stream.hpp"
#include "../runtime/asio_all.hpp"
#include "counting_transfer_all.hpp"
#include "tls_channel.hpp"

namespace corvid::detail {

class byte_stream {
 public:
  using socket_type = asio::generic::stream_protocol::socket;
  using time_point = std::chrono::steady_clock::time_point;
  enum class kind : std::uint8_t { socket, tls, rdma };

  explicit byte_stream(asio::io_context& reactor) : socket_(reactor) {}
  explicit byte_stream(socket_type socket) : socket_(std::move(socket)) {}
  byte_stream(const byte_stream&) = delete;
  byte_stream& operator=(const byte_stream&) = delete;

  kind carrier() const noexcept { return kind_; }
  bool is_rdma() const noexcept { return kind_ == kind::rdma; }
  bool is_tls() const noexcept { return kind_ == kind::tls; }
  // The socket underneath: connect, options, addresses. Not to be used for bytes once RDMA
  // has taken over (the side channel owns it then).
  socket_type& socket() noexcept { return socket_; }
  const socket_type& socket() const noexcept { return socket_; }
  bool is_open() const noexcept;

  // Puts TLS with `ctx` on the socket; the handshake follows with tls().async_handshake.
  // Before any byte was read or written.
  void start_tls(std::shared_ptr<asio::ssl::context> ctx, bool server);
  tls_channel& tls() noexcept { return *tls_; }
  // The peer's certificate chain and name checks passed (TLS), as OpenSSL saw them.
  long tls_verify_result() const noexcept;
  // Hands the bytes to `stream`; the socket goes along as its side channel (without TLS,
  // if it had it). No TLS or socket operation may be in flight.
  void switch_to_rdma(std::shared_ptr<rdma::rdma_stream> stream);

  // Reads what is there, up to `size` bytes, into `data`. `cancel` (may be null) can stop
  // it where read_cancellable().
  template <class Handler>
  void async_read_some(char* data, std::size_t size, asio::cancellation_signal* cancel,
                       Handler&& done) {
    switch (kind_) {
      case kind::socket:
        if (cancel != nullptr) {
          socket_.async_read_some(
              asio::buffer(data, size),
              asio::bind_cancellation_slot(cancel->slot(), recycled(std::forward<Handler>(done))));
        } else {
          socket_.async_read_some(asio::buffer(data, size), recycled(std::forward<Handler>(done)));
        }
        return;
      case kind::tls:
        tls_->async_read_some(data, size, std::forward<Handler>(done));
        return;
      case kind::rdma:
        rdma_->async_read_some(data, size, std::forward<Handler>(done));
        return;
    }
  }
  bool read_cancellable() const noexcept { return kind_ == kind::socket; }

  // Writes all of `buffers`. `writes` counts the write calls it took (syscalls; TLS
  // records; RDMA SENDs); `progress`/`moved` (may be null) as in counting_transfer_all.
  template <class Handler>
  void async_write(const std::vector<asio::const_buffer>& buffers, std::uint64_t* writes,
                   time_point* progress, time_point* moved, Handler&& done) {
    if (kind_ == kind::socket) [[likely]] {
      asio::async_write(socket_, buffer_range(buffers),
                        counting_transfer_all{writes, progress, moved},
                        recycled(std::forward<Handler>(done)));
    } else if (kind_ == kind::tls) {
      tls_->async_write(buffers, writes, progress, moved, std::forward<Handler>(done));
    } else {
      rdma_->async_write(buffers, writes, std::forward<Handler>(done));
    }
  }
  // Blocks until all of `buffers` is written (a socket; false on TLS and RDMA, which write
  // only asynchronously).
  bool write_blocking(const std::vector<asio::const_buffer>& buffers, std::uint64_t* writes,
                      std::size_t& written, std::error_code& ec);

  // Socket-only facts (see the top): 0 / false / no-op once RDMA carries the bytes.
  std::size_t kernel_send_queue() const noexcept;
  bool peer_finished() const noexcept;  // poll(): the peer's FIN has arrived
  // Runs `done(ec)` when the socket reports an error (the peer reset), or with an error
  // when it closes.
  void watch_error(std::function<void(const std::error_code&)> done);

  // Closes the socket (and TLS on it: no close_notify, the connection is being dropped).
  // An RDMA stream closes gracefully: `rdma_closed` runs once its last SENDs completed;
  // otherwise it runs inline. Returns whether it will run later.
  bool close(std::function<void()> rdma_closed = {});

 private:
  socket_type socket_;
  std::unique_ptr<tls_channel> tls_;
  std::shared_ptr<rdma::rdma_stream> rdma_;
  kind kind_ = kind::socket;
};

}  // namespace corvid::detail
