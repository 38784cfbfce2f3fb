#include "byte_stream.hpp"

#include <poll.h>

#include "../runtime/asio_all.hpp"
#include <linux/sockios.h>
#include <sys/ioctl.h>

namespace corvid::detail {

bool byte_stream::is_open() const noexcept {
  return kind_ == kind::rdma ? rdma_->is_open() : socket().is_open();
}

void byte_stream::start_tls(std::shared_ptr<asio::ssl::context> ctx, bool server) {
  tls_ = std::make_unique<tls_channel>(socket_, std::move(ctx), server);
  kind_ = kind::tls;
}

long byte_stream::tls_verify_result() const noexcept {
  return tls_ ? ::SSL_get_verify_result(tls_->native_handle()) : X509_V_OK;
}

void byte_stream::switch_to_rdma(std::shared_ptr<rdma::rdma_stream> stream) {
  // After a setup over TLS the side channel is the bare socket, taken out of the TLS
  // session (which is freed): it carries nothing but its closing, which TLS has nothing to
  // add to, and neither side writes on it again, not even a close_notify. A peer that does
  // send one is leaving, so any bytes on it read as closed, like its FIN.
  const bool was_tls = kind_ == kind::tls;
  tls_.reset();
  rdma_ = std::move(stream);
  rdma_->attach_side_channel(std::move(socket()), was_tls);
  kind_ = kind::rdma;
}

bool byte_stream::write_blocking(const std::vector<asio::const_buffer>& buffers,
                                 std::uint64_t* writes, std::size_t& written, std::error_code& ec) {
  const counting_transfer_all count{writes};
  switch (kind_) {
    case kind::socket:
      written = asio::write(socket_, buffer_range(buffers), count, ec);
      return true;
    case kind::tls:  // TLS writes go through its channel, asynchronously
    case kind::rdma:
      break;
  }
  return false;
}

std::size_t byte_stream::kernel_send_queue() const noexcept {
  int queued = 0;
  if (kind_ == kind::rdma || !socket().is_open() ||
      ::ioctl(const_cast<socket_type&>(socket()).native_handle(), SIOCOUTQ, &queued) != 0) {
    return 0;
  }
  return static_cast<std::size_t>(std::max(queued, 0));
}

bool byte_stream::peer_finished() const noexcept {
  if (kind_ == kind::rdma || !socket().is_open()) return false;
  pollfd p{const_cast<socket_type&>(socket()).native_handle(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLRDHUP) != 0;
}

void byte_stream::watch_error(std::function<void(const std::error_code&)> done) {
  if (kind_ == kind::rdma) return;
  socket().async_wait(asio::socket_base::wait_error, std::move(done));
}

bool byte_stream::close(std::function<void()> rdma_closed) {
  std::error_code ignored;
  if (kind_ != kind::rdma) {
    socket().shutdown(asio::socket_base::shutdown_both, ignored);
    socket().close(ignored);
  }
  if (kind_ == kind::rdma) {
    rdma_->close(std::move(rdma_closed));
    return true;
  }
  return false;
}

}  // namespace corvid::detail
