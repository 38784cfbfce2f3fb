#pragma once
// TLS on a connected socket, with OpenSSL driven directly through a BIO of our own, so that
// coalescing survives encryption: a write encrypts the whole gathered batch (up to one chunk
// of plaintext) into records of up to 16 KiB, one after the other in one buffer, and hands
// that buffer to the kernel in one write. (asio::ssl::stream writes each record with a
// syscall of its own: 8x fewer RPCs per write at 256 small calls in flight.)
//
// Reads take up to one buffer of ciphertext per recv and decrypt straight into the caller's
// buffer. One read and one write may be in flight at once, as on a socket; everything runs
// on the socket's reactor thread. Records OpenSSL produces on its own after the handshake
// (a TLS 1.3 key update answer) leave with the next write.
//
// Memory: the receive buffer and the write chunk start at min_buffer and double while they
// are filled, up to max_buffer (big payloads need big writes: 16 KiB records one syscall
// each run at a third of the plaintext speed). memory_bytes is what a connection holds at
// first with OpenSSL's own session and record buffers; each growth is reserved first on the
// budget (set_budget: the server's tls_sessions tracker) and skipped when it is refused.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <system_error>
#include <vector>

#include "corvid/detail/recycled_handler.hpp"
#include "corvid/memory/memory_tracker.hpp"

#include "../runtime/asio_all.hpp"
#include "../runtime/io_handler.hpp"
#include "asio_ssl.hpp"
#include "counting_transfer_all.hpp"
#include <openssl/ssl.h>

namespace corvid::detail {

class tls_channel {
 public:
  using socket_type = asio::generic::stream_protocol::socket;
  using time_point = std::chrono::steady_clock::time_point;
  static constexpr std::size_t min_buffer = 16 * 1024;
  static constexpr std::size_t max_buffer = 256 * 1024;
  static constexpr std::size_t memory_bytes = 96 * 1024;

  // `socket` (connected, not yet used) must outlive the channel.
  tls_channel(socket_type& socket, std::shared_ptr<asio::ssl::context> ctx, bool server);
  ~tls_channel();
  tls_channel(const tls_channel&) = delete;
  tls_channel& operator=(const tls_channel&) = delete;

  SSL* native_handle() const noexcept { return ssl_; }
  // Buffer growth is reserved on `budget` (which must outlive the channel's operations).
  void set_budget(memory_tracker* budget) noexcept { budget_ = budget; }
  void async_handshake(std::function<void(const std::error_code&)> done);
  void async_read_some(char* data, std::size_t size, io_handler done);
  // Writes all of `buffers` (which must stay unchanged until `done`). `writes` counts the
  // write syscalls; `progress`/`moved` as in counting_transfer_all.
  void async_write(const std::vector<asio::const_buffer>& buffers, std::uint64_t* writes,
                   time_point* progress, time_point* moved, io_handler done);

 private:
  static int bio_write(BIO* b, const char* data, int len);
  static int bio_read(BIO* b, char* data, int len);
  static long bio_ctrl(BIO* b, int cmd, long num, void* ptr);
  static BIO_METHOD* bio_method();

  // The error of a failed SSL call (`r` its return), as asio's ssl category or eof.
  std::error_code ssl_error(int r);
  void handshake_step(std::function<void(const std::error_code&)> done);
  // Decrypts into the pending read; false when more ciphertext is needed.
  bool try_read(std::error_code& ec, std::size_t& n);
  void read_socket(io_handler done);
  // A non-blocking recv into in_ (0: nothing there now).
  std::size_t receive_now(std::error_code& ec);
  void compact_input();
  // Doubles the receive buffer / the write chunk, if the budget allows.
  void grow_input();
  void grow_chunk();
  bool reserve(std::size_t bytes) noexcept;
  // Encrypts the next chunk of the pending write into out_; then writes out_ if no socket
  // write is in flight, and completes the pending write once all of it is written.
  void pump_write(io_handler done);
  // Writes out_ (swapped into sending_), then runs `after(ec)`.
  template <class After>
  void write_socket(After&& after) {
    std::swap(out_, sending_);
    out_.clear();
    socket_writing_ = true;
    std::uint64_t* calls = write_calls_ != nullptr ? write_calls_ : &internal_writes_;
    asio::async_write(socket_, asio::buffer(sending_),
                      counting_transfer_all{calls, write_progress_, write_moved_},
                      recycled([this, after = std::forward<After>(after)](const std::error_code& ec,
                                                                          std::size_t) mutable {
                        socket_writing_ = false;
                        sending_.clear();
                        after(ec);
                      }));
  }

  socket_type& socket_;
  std::shared_ptr<asio::ssl::context> ctx_;
  SSL* ssl_ = nullptr;

  memory_tracker* budget_ = nullptr;
  std::size_t in_room_ = min_buffer;
  std::size_t chunk_ = min_buffer;  // plaintext encrypted per socket write
  std::unique_ptr<char[]> in_;      // ciphertext received; [in_begin_, in_end_) not yet decrypted
  std::size_t in_begin_ = 0;
  std::size_t in_end_ = 0;
  bool last_recv_full_ = false;  // the last recv filled in_: the kernel may hold more
  std::vector<char> out_;        // ciphertext waiting for the socket
  std::vector<char> sending_;    // ciphertext the socket write in flight holds
  bool socket_writing_ = false;
  std::uint64_t internal_writes_ = 0;  // the handshake's writes (not counted in stats)
  std::error_code write_error_;        // a failed socket write fails every later one

  char* read_data_ = nullptr;
  std::size_t read_size_ = 0;

  const std::vector<asio::const_buffer>* write_buffers_ = nullptr;
  std::size_t write_index_ = 0;   // next buffer to encrypt
  std::size_t write_offset_ = 0;  // in it
  std::size_t write_total_ = 0;
  std::uint64_t* write_calls_ = nullptr;
  time_point* write_progress_ = nullptr;
  time_point* write_moved_ = nullptr;
};

}  // namespace corvid::detail
