#include "tls_channel.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "../runtime/asio_all.hpp"
#include "asio_ssl.hpp"
#include "counting_transfer_all.hpp"
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace corvid::detail {

// ---- the BIO: OpenSSL reads ciphertext from in_ and appends what it writes to out_ ------

int tls_channel::bio_write(BIO* b, const char* data, int len) {
  auto* self = static_cast<tls_channel*>(::BIO_get_data(b));
  self->out_.insert(self->out_.end(), data, data + len);
  return len;
}

int tls_channel::bio_read(BIO* b, char* data, int len) {
  auto* self = static_cast<tls_channel*>(::BIO_get_data(b));
  const std::size_t available = self->in_end_ - self->in_begin_;
  if (available == 0) {
    ::BIO_set_retry_read(b);  // SSL_ERROR_WANT_READ: the next recv brings more
    return -1;
  }
  const std::size_t n = std::min(available, static_cast<std::size_t>(len));
  std::memcpy(data, self->in_.get() + self->in_begin_, n);
  self->in_begin_ += n;
  if (self->in_begin_ == self->in_end_) self->in_begin_ = self->in_end_ = 0;
  return static_cast<int>(n);
}

long tls_channel::bio_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;  // writes land in out_ at once: nothing to flush
}

BIO_METHOD* tls_channel::bio_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = ::BIO_meth_new(::BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "corvid");
    ::BIO_meth_set_write(m, &tls_channel::bio_write);
    ::BIO_meth_set_read(m, &tls_channel::bio_read);
    ::BIO_meth_set_ctrl(m, &tls_channel::bio_ctrl);
    ::BIO_meth_set_create(m, [](BIO* b) {
      ::BIO_set_init(b, 1);
      return 1;
    });
    return m;
  }();
  return method;
}

tls_channel::tls_channel(socket_type& socket, std::shared_ptr<asio::ssl::context> ctx, bool server)
    : socket_(socket), ctx_(std::move(ctx)), in_(new char[min_buffer]) {
  ssl_ = ::SSL_new(ctx_->native_handle());
  if (ssl_ == nullptr) throw std::bad_alloc();
  BIO* bio = ::BIO_new(bio_method());
  if (bio == nullptr) {
    ::SSL_free(ssl_);
    throw std::bad_alloc();
  }
  ::BIO_set_data(bio, this);
  ::SSL_set_bio(ssl_, bio, bio);  // one BIO both ways; the SSL owns it
  ::SSL_set_options(ssl_, SSL_OP_NO_RENEGOTIATION);
  if (server) {
    ::SSL_set_accept_state(ssl_);
  } else {
    ::SSL_set_connect_state(ssl_);
  }
}

tls_channel::~tls_channel() { ::SSL_free(ssl_); }

std::error_code tls_channel::ssl_error(int r) {
  switch (::SSL_get_error(ssl_, r)) {
    case SSL_ERROR_ZERO_RETURN:
      return asio::error::eof;  // the peer's close_notify
    case SSL_ERROR_SSL:
      if (const unsigned long e = ::ERR_get_error(); e != 0) {
        return {static_cast<int>(e), asio::error::get_ssl_category()};
      }
      break;
    default:
      break;
  }
  return asio::ssl::error::stream_truncated;
}

// ---- handshake ----------------------------------------------------------------------------

void tls_channel::async_handshake(std::function<void(const std::error_code&)> done) {
  handshake_step(std::move(done));
}

// The handler travels inside the socket operations, never in a member: the operations own
// it, so a reactor torn down with them pending destroys it (and what it keeps alive).
void tls_channel::handshake_step(std::function<void(const std::error_code&)> done) {
  ::ERR_clear_error();
  const int r = ::SSL_do_handshake(ssl_);
  const bool finished = r == 1;
  if (!finished && ::SSL_get_error(ssl_, r) != SSL_ERROR_WANT_READ) {
    const auto ec = ssl_error(r);
    // The alert telling the peer why goes out first, best effort.
    if (!out_.empty()) {
      write_socket([ec, done = std::move(done)](const std::error_code&) { done(ec); });
    } else {
      done(ec);
    }
    return;
  }
  auto next = [this, finished, done = std::move(done)](const std::error_code& ec) mutable {
    if (ec || finished) {
      done(ec);
      return;
    }
    socket_.async_read_some(
        asio::buffer(in_.get() + in_end_, in_room_ - in_end_),
        [this, done = std::move(done)](const std::error_code& e, std::size_t n) mutable {
          if (e) {
            done(e);
            return;
          }
          in_end_ += n;
          handshake_step(std::move(done));
        });
  };
  if (!out_.empty()) {
    write_socket(std::move(next));  // our flight first, then the peer's answer
  } else {
    next({});
  }
}

// ---- reading ------------------------------------------------------------------------------

void tls_channel::async_read_some(char* data, std::size_t size, io_handler done) {
  read_data_ = data;
  read_size_ = size;
  std::error_code ec;
  std::size_t n = 0;
  if (try_read(ec, n)) {  // from records already received: completes later, as a recv would
    asio::post(socket_.get_executor(),
               recycled([done = std::move(done), ec, n]() mutable { done(ec, n); }));
    return;
  }
  read_socket(std::move(done));
}

bool tls_channel::try_read(std::error_code& ec, std::size_t& n) {
  // As much as has arrived, record after record (SSL_read gives one record's plaintext per
  // call): a batch of requests must reach the connection as one read, or its replies leave
  // in as many writes.
  std::size_t total = 0;
  while (total < read_size_) {
    ::ERR_clear_error();
    std::size_t got = 0;
    const int r = ::SSL_read_ex(ssl_, read_data_ + total, read_size_ - total, &got);
    if (r == 1) {
      total += got;
      continue;
    }
    if (::SSL_get_error(ssl_, r) != SSL_ERROR_WANT_READ) {
      if (total == 0) ec = ssl_error(r);
      break;  // with data: the error comes again with the next read
    }
    // The records received are used up. A recv that filled our buffer left more in the
    // kernel: take it now, without waiting (EAGAIN ends the batch).
    if (!last_recv_full_) break;
    std::error_code e;
    const std::size_t more = receive_now(e);
    if (more == 0) break;
  }
  if (total == 0 && !ec) return false;
  n = total;
  return true;
}

std::size_t tls_channel::receive_now(std::error_code& ec) {
  compact_input();
  const std::size_t room = in_room_ - in_end_;
  const ssize_t got = ::recv(socket_.native_handle(), in_.get() + in_end_, room, MSG_DONTWAIT);
  if (got <= 0) {
    last_recv_full_ = false;
    if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      ec = std::error_code(errno, std::system_category());
    }
    return 0;  // an error or EOF shows again at the next socket read
  }
  in_end_ += static_cast<std::size_t>(got);
  last_recv_full_ = static_cast<std::size_t>(got) == room;
  if (last_recv_full_) grow_input();
  return static_cast<std::size_t>(got);
}

void tls_channel::compact_input() {
  if (in_begin_ != 0) {  // keep the undecrypted tail at the front
    std::memmove(in_.get(), in_.get() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
  }
}

void tls_channel::read_socket(io_handler done) {
  compact_input();
  socket_.async_read_some(
      asio::buffer(in_.get() + in_end_, in_room_ - in_end_),
      recycled([this, done = std::move(done)](const std::error_code& ec, std::size_t got) mutable {
        if (ec) {
          done(ec, 0);
          return;
        }
        last_recv_full_ = got == in_room_ - in_end_;
        in_end_ += got;
        if (last_recv_full_) grow_input();
        std::error_code e;
        std::size_t n = 0;
        if (try_read(e, n)) {
          done(e, n);
        } else {
          read_socket(std::move(done));  // not a whole record yet
        }
      }));
}

bool tls_channel::reserve(std::size_t bytes) noexcept {
  return budget_ == nullptr || budget_->try_reserve(bytes);
}

void tls_channel::grow_input() {
  if (in_room_ >= max_buffer || !reserve(in_room_)) return;
  std::unique_ptr<char[]> bigger(new char[2 * in_room_]);
  std::memcpy(bigger.get(), in_.get() + in_begin_, in_end_ - in_begin_);
  in_end_ -= in_begin_;
  in_begin_ = 0;
  in_ = std::move(bigger);
  in_room_ *= 2;
}

void tls_channel::grow_chunk() {
  // out_ and sending_ may each come to hold a chunk (and its records' overhead).
  if (chunk_ >= max_buffer || !reserve(2 * chunk_)) return;
  chunk_ *= 2;
}

// ---- writing ------------------------------------------------------------------------------

void tls_channel::async_write(const std::vector<asio::const_buffer>& buffers, std::uint64_t* writes,
                              time_point* progress, time_point* moved, io_handler done) {
  write_buffers_ = &buffers;
  write_index_ = write_offset_ = 0;
  write_total_ = 0;
  for (const auto& b : buffers) write_total_ += b.size();
  write_calls_ = writes;
  write_progress_ = progress;
  write_moved_ = moved;
  if (write_error_ || write_total_ == 0) {
    asio::post(socket_.get_executor(),
               recycled([done = std::move(done), ec = write_error_]() mutable { done(ec, 0); }));
    return;
  }
  pump_write(std::move(done));
}

void tls_channel::pump_write(io_handler done) {
  // Records of up to 16 KiB each, from the queued buffers, until a chunk is gathered.
  const auto& buffers = *write_buffers_;
  while (write_index_ < buffers.size() && out_.size() < chunk_) {
    const auto& b = buffers[write_index_];
    const std::size_t take = std::min(b.size() - write_offset_, chunk_ - out_.size());
    std::size_t written = 0;
    ::ERR_clear_error();
    if (take != 0 && ::SSL_write_ex(ssl_, static_cast<const char*>(b.data()) + write_offset_, take,
                                    &written) != 1) {
      write_error_ = ssl_error(0);
      done(write_error_, 0);
      return;
    }
    write_offset_ += written;
    if (write_offset_ == b.size()) {
      ++write_index_;
      write_offset_ = 0;
    }
  }
  if (out_.empty()) {  // all of it written
    done({}, write_total_);
    return;
  }
  if (write_index_ < buffers.size()) grow_chunk();  // a batch bigger than a chunk
  write_socket([this, done = std::move(done)](const std::error_code& ec) mutable {
    if (ec) {
      write_error_ = ec;
      done(ec, 0);
      return;
    }
    pump_write(std::move(done));
  });
}

}  // namespace corvid::detail
