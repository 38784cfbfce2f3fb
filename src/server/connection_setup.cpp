// A server connection's first moments: pre-authentication, the first byte telling TLS, HTTP
// and corvid apart, the TLS handshake, and an RDMA setup switching the transport.
// docs/architecture.md, "Admission".
#include "connection_setup.hpp"

#include <cerrno>
#include <string>

#include "../admin/admin_session.hpp"
#include "../rdma/handshake.hpp"
#include "../transport/tls_context.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"
#include "transport_identity.hpp"
#include <sys/socket.h>

namespace corvid::detail {

connection_setup::~connection_setup() = default;

void connection_setup::start(std::shared_ptr<const server_tls> tls) {
  if (!enter_pre_auth(tls != nullptr)) {
    c_.core_.stats.on_pre_auth_refusal();
    c_.close();  // no place or budget: a TLS or HTTP peer could not read a corvid error
    return;
  }
  wait_first_byte(std::move(tls));
}

bool connection_setup::enter_pre_auth(bool tls) {
  pre_auth_ = c_.core_.pre_auth->take(peer_key(c_.stream_.socket()));
  if (!pre_auth_ || !c_.mem().reserve_pre_auth(sizeof(server_connection), c_.peer_)) return false;
  const auto limit =
      tls ? c_.core_.tls()->config.handshake_timeout : c_.core_.config.frame_read_timeout;
  if (limit.count() > 0) {
    pre_auth_deadline_ = std::make_unique<asio::steady_timer>(c_.reactor_);
    pre_auth_deadline_->expires_after(limit);
    pre_auth_deadline_->async_wait([self = c_.self()](const std::error_code& ec) {
      connection_setup& s = self->setup_;
      if (ec || !s.pre_auth_) return;
      s.pre_auth_expired_ = true;
      std::error_code ignored;
      self->stream_.socket().close(ignored);  // the wait or handshake ends with an error
    });
  }
  return true;
}

bool connection_setup::end_pre_auth(bool as_tls) {
  pre_auth_.reset();
  if (pre_auth_deadline_) pre_auth_deadline_->cancel();
  return c_.mem().end_pre_auth(as_tls, c_.peer_);
}

void connection_setup::wait_first_byte(std::shared_ptr<const server_tls> tls) {
  c_.stream_.socket().async_wait(
      asio::socket_base::wait_read,
      [self = c_.self(), tls = std::move(tls)](const std::error_code& ec) {
        if (ec || self->gate_.closed()) {
          self->close();
          return;
        }
        self->setup_.on_first_byte(tls);
      });
}

void connection_setup::on_first_byte(const std::shared_ptr<const server_tls>& tls) {
  unsigned char first = 0;
  const ssize_t n = ::recv(c_.stream_.socket().native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    wait_first_byte(tls);  // a readiness report with nothing to read (spurious wake-up)
    return;
  }
  if (n <= 0) {
    c_.close();  // gone before saying anything (or an error)
    return;
  }
  if (c_.core_.config.http_admin && admin::looks_like_http(first)) {
    end_pre_auth(false);  // the admin session has places and a budget of its own
    admin::serve(c_.core_, std::move(c_.stream_.socket()));  // GET or HEAD: the admin pages
    c_.close();
    return;
  }
  if (tls && first == tls_handshake_record) {
    handshake(tls);
    return;
  }
  end_pre_auth(false);
  if (!tls || tls->config.allow_plaintext) {
    c_.gate_.begin();  // a plaintext client (served as before TLS was on)
    return;
  }
  // Said in plaintext, so a plaintext corvid client reads why it is refused.
  c_.refuse_with(rpc_errc::protocol_error,
                 "this server requires TLS (rpc_client::init_tls or client_config::tls)");
}

void connection_setup::handshake(std::shared_ptr<const server_tls> tls) {
  // Charged to the pre-authentication budget until the handshake completes.
  if (!c_.mem().reserve_pre_auth(tls_channel::memory_bytes, c_.peer_)) {
    c_.core_.stats.on_pre_auth_refusal();
    c_.close();  // no memory for another TLS session; a TLS client cannot read a plaintext error
    return;
  }
  c_.stream_.start_tls(tls->context, true);
  c_.stream_.tls().set_budget(c_.mem().pre_auth_tracker());
  c_.stream_.tls().async_handshake(
      [self = c_.self(), tls = std::move(tls)](const std::error_code& ec) {
        server_connection& c = *self;
        const bool timed_out = c.setup_.pre_auth_expired_;
        if (c.gate_.closed()) return;
        if (ec) {
          if (tls->config.on_handshake_error) {
            const std::string why =
                timed_out ? "no TLS handshake within " +
                                std::to_string(tls->config.handshake_timeout.count()) + " ms"
                          : describe_tls_failure(ec, c.stream_.tls_verify_result());
            tls->config.on_handshake_error(
                c.peer_, {rpc_errc::connect_failed, "TLS handshake failed: " + why});
          }
          c.close();
          return;
        }
        // Authenticated: its session is an established one's now, charged like one.
        if (!c.setup_.end_pre_auth(true)) {
          c.close();
          return;
        }
        c.stream_.tls().set_budget(c.mem().tls_tracker());
        c.metrics_.connection().transport = metrics::transport_kind::tls;
        // Once per connection: every call on it (and an RDMA switch) keeps this identity.
        c.identity_ = std::make_unique<peer_identity>();
        read_certificate_identity(c.stream_.tls().native_handle(), *c.identity_);
        if (!c.setup_.charge_identity()) {
          c.close();
          return;
        }
        c.gate_.begin();
      });
}

void connection_setup::on_rdma_setup(const protocol::frame_header& h, const char* payload) {
  // Over TLS too: the client's setup (and our answer) then travel authenticated and
  // encrypted; the bytes move to the queue pair all the same (switch_to_rdma).
  if (c_.stream_.is_rdma() || rdma_next_ || c_.dispatch_.served()) {
    c_.fail(0, rpc_errc::protocol_error, "rdma_setup is only valid as a connection's first frame");
    return;
  }
  if (!c_.core_.rdma) {
    c_.fail(0, rpc_errc::protocol_error,
            "RDMA is not enabled on this server (rpc_server::init_ibv)");
    return;
  }
  outbound_queue& out = c_.writer().queue();
  if (protocol::unknown_must_understand(h) != 0) {  // a setup this build cannot read
    out.append(
        rdma::setup_frame(rpc_errc::bad_request, protocol::describe_unknown_must_understand(h)));
    c_.gate_.stop();  // closes once the refusal is written
    return;
  }
  std::string answer;
  std::error_code ec;
  const auto remote = c_.stream_.socket().remote_endpoint(ec);
  const std::string peer = ec ? std::string("unknown") : peer_key(remote);
  auto stream = rdma::accept_setup(c_.core_.rdma, c_.reactor_, &c_.core_.stats,
                                   std::string_view(payload, h.payload_size()), peer, answer);
  if (!stream) {
    out.append(rdma::setup_frame(stream.error().code(), stream.error().message()));
    c_.gate_.stop();  // closes once the refusal is written
    return;
  }
  out.append(rdma::setup_frame(rpc_errc::ok, answer));
  rdma_next_ = std::move(*stream);
}

void connection_setup::switch_to_rdma() {
  c_.stream_.switch_to_rdma(std::move(rdma_next_));  // a TLS session used for the setup is freed
  c_.metrics_.connection().transport = metrics::transport_kind::rdma;
  c_.mem().release_tls();
  (void)charge_identity();  // it stays, charged again where the session's bytes were
  c_.frames_.read_buffer().clear();
  c_.gate_.read_more();
}

bool connection_setup::charge_identity() {
  memory_tracker* t = c_.mem().tls_tracker();
  const std::size_t bytes = c_.identity_ ? held_bytes(*c_.identity_) : 0;
  if (t == nullptr || bytes == 0 || t->try_reserve(bytes)) return true;
  // Bytes of a certificate the CA signed, yet too many for the memory left: refused like a
  // session that does not fit (the connection closes), never held uncharged.
  c_.identity_.reset();
  return false;
}

void connection_setup::closed() {
  if (pre_auth_) end_pre_auth(false);  // its place is free the moment the peer is gone
  if (rdma_next_) rdma_next_->close();
}

}  // namespace corvid::detail
