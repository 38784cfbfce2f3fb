// A server connection's first moments: pre-authentication (a place and a budget until the
// first byte and, for TLS, the handshake), the first byte telling TLS, HTTP and corvid
// apart, the read buffer taken once the peer may send frames, and an RDMA setup switching
// the transport. docs/architecture.md, "Admission".
#include <cerrno>

#include "corvid/memory/buffer_pool.hpp"

#include "../admin/admin_session.hpp"
#include "../admission/shared_slots.hpp"
#include "../rdma/handshake.hpp"
#include "../transport/tls_context.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"
#include <sys/socket.h>

namespace corvid::detail {

void server_connection::start() {
  if (live_.has_time_limits()) {
    timer_.emplace(reactor_);
    live_.last_activity = frames_.clock.last_heard = std::chrono::steady_clock::now();
    arm_timer();
  }
  auto tls = core_.tls();
  if (tls || core_.config.http_admin) {  // the first byte tells TLS and HTTP from corvid
    if (!enter_pre_auth(tls != nullptr)) {
      core_.stats.on_pre_auth_refusal();
      close();  // no place or budget: a TLS or HTTP peer could not read a corvid error
      return;
    }
    begin_tls(std::move(tls));
    return;
  }
  begin_reading();
}

bool server_connection::enter_pre_auth(bool tls) {
  pre_auth_ = core_.pre_auth->take(peer_key(stream_.socket()));
  if (!pre_auth_ || !mem_.reserve_pre_auth(sizeof(*this), peer_)) return false;
  const auto limit = tls ? core_.tls()->config.handshake_timeout : core_.config.frame_read_timeout;
  if (limit.count() > 0) {
    pre_auth_deadline_.emplace(reactor_);
    pre_auth_deadline_->expires_after(limit);
    pre_auth_deadline_->async_wait([self = std::static_pointer_cast<server_connection>(
                                        shared_from_this())](const std::error_code& ec) {
      if (ec || !self->pre_auth_) return;
      self->pre_auth_expired_ = true;
      std::error_code ignored;
      self->stream_.socket().close(ignored);  // the wait or handshake ends with an error
    });
  }
  return true;
}

bool server_connection::end_pre_auth(bool as_tls) {
  pre_auth_.reset();
  if (pre_auth_deadline_) pre_auth_deadline_->cancel();
  return mem_.end_pre_auth(as_tls, peer_);
}

void server_connection::begin_reading() {
  // Read buffers come from the reactors' pools: connection churn does not reach malloc, and
  // neither does a buffer growing for a big frame and shrinking back (up to 256 KiB). It is
  // charged before it is taken; without room the connection waits for read memory, holding
  // none. (The connection object and the kernel's socket buffers are bounded by the number of
  // connections: server_config::max_connections and the process's descriptor limit.)
  const std::size_t size = buffer_pool::class_size(core_.config.read_buffer_size);
  if (!mem_.reserve_first_read(size)) {
    wait_for_memory(true, size);
    return;
  }
  const auto block = buffer_pool::for_this_thread().acquire(size);
  frames_.read_buffer().adopt_storage(block.data, block.capacity);
  frames_.read_buffer().draw_from_thread_pool();
  mem_.settle_read(frames_.read_buffer().capacity());
  read_more();
}

void server_connection::begin_tls(std::shared_ptr<const server_tls> tls) {
  auto self = std::static_pointer_cast<server_connection>(shared_from_this());
  stream_.socket().async_wait(asio::socket_base::wait_read,
                              [self, tls = std::move(tls)](const std::error_code& ec) {
                                if (ec || self->closed_) {
                                  self->close();
                                  return;
                                }
                                self->on_first_byte(tls);
                              });
}

void server_connection::on_first_byte(const std::shared_ptr<const server_tls>& tls) {
  unsigned char first = 0;
  const ssize_t n = ::recv(stream_.socket().native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    begin_tls(tls);  // a readiness report with nothing to read (spurious wake-up): wait again
    return;
  }
  if (n <= 0) {
    close();  // gone before saying anything (or an error)
    return;
  }
  if (core_.config.http_admin && admin::looks_like_http(first)) {
    end_pre_auth(false);  // the admin session has places and a budget of its own
    admin::serve(core_, std::move(stream_.socket()));  // GET or HEAD: the admin pages
    close();
    return;
  }
  if (tls && first == tls_handshake_record) {
    handshake(tls);
    return;
  }
  end_pre_auth(false);
  if (!tls || tls->config.allow_plaintext) {
    begin_reading();  // a plaintext client (served as before TLS was on)
    return;
  }
  // Said in plaintext, so a plaintext corvid client reads why it is refused.
  refuse_with(rpc_errc::protocol_error,
              "this server requires TLS (rpc_client::init_tls or client_config::tls)");
}

void server_connection::handshake(std::shared_ptr<const server_tls> tls) {
  // Charged to the pre-authentication budget until the handshake completes.
  if (!mem_.reserve_pre_auth(tls_channel::memory_bytes, peer_)) {
    core_.stats.on_pre_auth_refusal();
    close();  // no memory for another TLS session; a TLS client cannot read a plaintext error
    return;
  }
  stream_.start_tls(tls->context, true);
  stream_.tls().set_budget(mem_.pre_auth_tracker());
  auto self = std::static_pointer_cast<server_connection>(shared_from_this());
  stream_.tls().async_handshake([self, tls = std::move(tls)](const std::error_code& ec) {
    const bool timed_out = self->pre_auth_expired_;
    if (self->closed_) return;
    if (ec) {
      if (tls->config.on_handshake_error) {
        const std::string why =
            timed_out ? "no TLS handshake within " +
                            std::to_string(tls->config.handshake_timeout.count()) + " ms"
                      : describe_tls_failure(ec, self->stream_.tls_verify_result());
        tls->config.on_handshake_error(self->peer_,
                                       {rpc_errc::connect_failed, "TLS handshake failed: " + why});
      }
      self->close();
      return;
    }
    // Authenticated: its session is an established one's now, charged like one.
    if (!self->end_pre_auth(true)) {
      self->close();
      return;
    }
    self->stream_.tls().set_budget(self->mem_.tls_tracker());
    self->metrics_.connection().transport = metrics::transport_kind::tls;
    self->begin_reading();
  });
}

void server_connection::refuse(std::string reason) { refuse_with(rpc_errc::server_busy, reason); }

void server_connection::refuse_with(rpc_errc code, std::string_view reason) {
  fail(0, code, reason);
  flush();
}

void server_connection::on_rdma_setup(const protocol::frame_header& h, const char* payload) {
  // Over TLS too: the client's setup (and our answer) then travel authenticated and
  // encrypted; the bytes move to the queue pair all the same (switch_to_rdma).
  if (stream_.is_rdma() || rdma_next_ || served_request_) {
    fail(0, rpc_errc::protocol_error, "rdma_setup is only valid as a connection's first frame");
    return;
  }
  if (!core_.rdma) {
    fail(0, rpc_errc::protocol_error, "RDMA is not enabled on this server (rpc_server::init_ibv)");
    return;
  }
  if (protocol::unknown_must_understand(h) != 0) {  // a setup this build cannot read
    pending_.append(
        rdma::setup_frame(rpc_errc::bad_request, protocol::describe_unknown_must_understand(h)));
    stop_reading_ = true;  // closes once the refusal is written
    return;
  }
  std::string answer;
  std::error_code ec;
  const auto remote = stream_.socket().remote_endpoint(ec);
  const std::string peer = ec ? std::string("unknown") : peer_key(remote);
  auto stream = rdma::accept_setup(core_.rdma, reactor_, &core_.stats,
                                   std::string_view(payload, h.payload_size()), peer, answer);
  if (!stream) {
    pending_.append(rdma::setup_frame(stream.error().code(), stream.error().message()));
    stop_reading_ = true;  // closes once the refusal is written
    return;
  }
  pending_.append(rdma::setup_frame(rpc_errc::ok, answer));
  rdma_next_ = std::move(*stream);
}

void server_connection::switch_to_rdma() {
  stream_.switch_to_rdma(std::move(rdma_next_));  // a TLS session used for the setup is freed
  metrics_.connection().transport = metrics::transport_kind::rdma;
  mem_.release_tls();
  frames_.read_buffer().clear();
  read_more();
}

}  // namespace corvid::detail
