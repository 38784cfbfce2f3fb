#include "admin_session.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include "../runtime/asio_all.hpp"
#include "../transport/tls_channel.hpp"
#include "admin_auth.hpp"
#include "admin_pages.hpp"
#include "http_request.hpp"

namespace corvid::admin {
namespace {

using socket_type = asio::generic::stream_protocol::socket;

// A slow sender gets this long for its whole request head (frame_read_timeout when shorter):
// a peer dribbling bytes (slowloris) holds a session and its buffer no longer. A peer that
// leaves sooner (reset, FIN) ends its session at once: a read is pending the whole time.
constexpr std::chrono::milliseconds max_request_time{10'000};
// After the response: how long unread request bytes are drained before the close (closing
// with them unread would reset the connection and could destroy the response in flight).
constexpr std::chrono::milliseconds linger{500};

class session : public std::enable_shared_from_this<session> {
 public:
  session(admin_host& host, socket_type socket, std::unique_ptr<detail::shared_slots::ticket> place,
          std::shared_ptr<asio::ssl::context> tls)
      : host_(host),
        memory_(host.admin_memory()),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        place_(std::move(place)),
        tls_context_(std::move(tls)) {}

  ~session() {
    tls_.reset();  // before the socket it runs on
    if (buffer_charged_) memory_.read_buffers.release(buffer_charge);
    if (reply_charged_ != 0) memory_.queued_replies.release(reply_charged_);
    if (tls_charged_) memory_.tls_sessions.release(detail::tls_channel::memory_bytes);
    if (buffer_charged_ || reply_charged_ != 0 || tls_charged_) memory_.notify();
  }  // place_ goes back to its pool here

  void start() {
    // The head buffer is charged before it is allocated, like every byte held for a peer.
    if (!memory_.read_buffers.try_reserve(buffer_charge)) {
      // A TLS client could not read a plaintext 503: closed.
      if (!tls_context_) reply(error_response(503, "server at its memory limit"), false);
      return;
    }
    buffer_charged_ = true;
    buffer_.reserve(buffer_charge);
    // Over TLS the handshake counts against the request head's time.
    const auto frt = host_.admin_config().frame_read_timeout;
    timer_.expires_after(frt.count() > 0 ? std::min(frt, max_request_time) : max_request_time);
    timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
      if (ec || self->responding_) return;
      self->timed_out_ = true;
      std::error_code ignored;
      // The read ends, answered 408. A TLS read cannot be cancelled mid-record: closed.
      if (self->tls_) {
        self->socket_.close(ignored);
      } else {
        self->socket_.cancel(ignored);
      }
    });
    if (tls_context_) {
      handshake();
    } else {
      read();
    }
  }

  // Queues the response and closes after it. Error responses are small and charged by force;
  // a page is checked against the limit first (respond()).
  void reply(const http_response& r, bool head_only) {
    responding_ = true;
    // A peer that does not read its response holds its place no longer than one that does
    // not send its request (write_timeout when shorter): the close fails the write.
    const auto wt = host_.admin_config().write_timeout;
    timer_.expires_after(wt.count() > 0 ? std::min(wt, max_request_time) : max_request_time);
    timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
      if (ec) return;
      std::error_code ignored;
      self->socket_.close(ignored);
    });
    const std::size_t size = serialized_size(r, head_only);
    memory_.queued_replies.reserve(size);
    reply_charged_ = size;
    out_ = serialize(r, head_only);
    auto written = [self = shared_from_this()](const std::error_code& ec, std::size_t) {
      if (ec) {
        self->timer_.cancel();  // the peer is gone: end now, not at the timer
        return;
      }
      self->finish();
    };
    if (tls_) {
      out_buffers_.assign(1, asio::buffer(out_));
      tls_->async_write(out_buffers_, nullptr, nullptr, nullptr, std::move(written));
    } else {
      asio::async_write(socket_, asio::buffer(out_), std::move(written));
    }
  }

 private:
  static constexpr std::size_t buffer_charge = max_request_head + 1;

  // HTTPS (admin_require_client_certificate): the server's context, so the same CA verifies
  // the client's certificate. Its session is charged to tls_sessions like a connection's.
  void handshake() {
    if (!memory_.tls_sessions.try_reserve(detail::tls_channel::memory_bytes)) {
      timer_.cancel();  // no memory for a TLS session; the peer could not read a plain 503
      return;
    }
    tls_charged_ = true;
    tls_ = std::make_unique<detail::tls_channel>(socket_, tls_context_, true);
    tls_->async_handshake([self = shared_from_this()](const std::error_code& ec) {
      if (ec) {
        self->timer_.cancel();  // failed or timed out: nothing the peer could read
        return;
      }
      SSL* ssl = self->tls_->native_handle();
      X509* cert = SSL_get0_peer_certificate(ssl);
      self->has_certificate_ = cert != nullptr && SSL_get_verify_result(ssl) == X509_V_OK;
      self->read();
    });
  }

  void read() {
    const std::size_t have = buffer_.size();
    buffer_.resize(buffer_charge);
    auto done = [self = shared_from_this(), have](const std::error_code& ec, std::size_t n) {
      self->buffer_.resize(have + n);
      self->on_read(ec);
    };
    if (tls_) {
      tls_->async_read_some(buffer_.data() + have, buffer_charge - have, std::move(done));
    } else {
      socket_.async_read_some(asio::buffer(buffer_.data() + have, buffer_charge - have),
                              std::move(done));
    }
  }

  void on_read(const std::error_code& ec) {
    if (timed_out_ && tls_) {
      timer_.cancel();  // the socket is closed: a 408 could not be written
      return;
    }
    if (timed_out_) {
      reply(error_response(408, "request head not received in time"), false);
      return;
    }
    if (ec) {
      // The peer reset or sent its FIN before its request was whole: nothing to answer. The
      // timer holds the session too; cancelled, the session (its place, its buffer) ends now.
      timer_.cancel();
      return;
    }
    http_request req;
    const parse_result r = parse_http_request(buffer_, req);
    if (r.status == parse_status::incomplete) {
      read();
      return;
    }
    if (r.status == parse_status::bad) {
      reply(error_response(r.error_status, r.reason), false);
      return;
    }
    respond(req);
  }

  void respond(const http_request& req) {
    if (auto refused = refuse_admin_request(req, host_.admin_config(), has_certificate_)) {
      reply(*refused, req.method == "HEAD");
      return;
    }
    http_response r;
    if (needs_snapshot(req.path)) {
      r = route(req, host_.metrics_snapshot(), host_.admin_config());
    } else {
      metrics::server_snapshot s;  // /health and unknown paths: no registry lock taken
      s.serving = !host_.stopping();
      r = route(req, s, host_.admin_config());
    }
    // The page exists already (it was built to be measured): a server at its limit does not
    // hold it for a peer, it answers 503 instead.
    const bool head_only = req.method == "HEAD";
    if (memory_.queued_replies.try_reserve(serialized_size(r, head_only))) {
      memory_.queued_replies.release(serialized_size(r, head_only));  // reply() charges it
    } else {
      r = error_response(503, "server at its memory limit");
    }
    reply(r, head_only);
  }

  void finish() {
    std::error_code ignored;
    socket_.shutdown(socket_type::shutdown_send, ignored);
    timer_.expires_after(linger);
    timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
      if (ec) return;
      std::error_code e;
      self->socket_.close(e);
    });
    drain();
  }

  void drain() {
    auto more = [self = shared_from_this()](const std::error_code& ec, std::size_t) {
      if (!ec) {
        self->drain();
        return;
      }
      self->timer_.cancel();  // EOF: the peer has the response
    };
    if (tls_) {
      tls_->async_read_some(scratch_, sizeof scratch_, std::move(more));
    } else {
      socket_.async_read_some(asio::buffer(scratch_), std::move(more));
    }
  }

  admin_host& host_;
  detail::server_memory& memory_;
  socket_type socket_;
  asio::steady_timer timer_;
  std::unique_ptr<detail::shared_slots::ticket> place_;  // null: refused (answered 503)
  std::shared_ptr<asio::ssl::context> tls_context_;      // null: plain HTTP
  std::unique_ptr<detail::tls_channel> tls_;             // on socket_, once the handshake began
  std::vector<asio::const_buffer> out_buffers_;          // out_, as tls_channel writes take it
  std::string buffer_;
  std::string out_;
  char scratch_[512];
  static std::size_t serialized_size(const http_response& r, bool head_only) {
    return 256 + r.content_type.size() + r.www_authenticate.size() +
           (head_only ? 0 : r.body.size());  // head <= 256 + type + challenge
  }
  bool buffer_charged_ = false;    // the head buffer, to read_buffers
  std::size_t reply_charged_ = 0;  // the response, to queued_replies
  bool tls_charged_ = false;       // tls_channel::memory_bytes, to tls_sessions
  bool has_certificate_ = false;   // the TLS peer sent a certificate the server verified
  bool timed_out_ = false;
  bool responding_ = false;
};

}  // namespace

void serve(admin_host& host, detail::shared_slots& sessions, socket_type socket,
           std::shared_ptr<asio::ssl::context> tls) {
  auto place = sessions.take(detail::peer_key(socket));
  const bool admitted = place != nullptr;
  auto s = std::make_shared<session>(host, std::move(socket), std::move(place), tls);
  if (!admitted && tls) return;  // a TLS client could not read a plaintext 503: closed
  if (!admitted) {
    s->reply(error_response(503, "too many admin connections"), false);
    return;
  }
  s->start();
}

void serve(admin_host& host, socket_type socket) {
  serve(host, host.rpc_port_admin_sessions(), std::move(socket), nullptr);
}

}  // namespace corvid::admin
