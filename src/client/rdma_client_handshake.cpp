#include "rdma_client_handshake.hpp"

#include <string>
#include <vector>

#include "corvid/codec/codec.hpp"

#include "../transport/asio_ssl.hpp"
#include "../transport/tls_context.hpp"

namespace corvid::rdma {

namespace {

// The client's side of the exchange; lives until `done` has run.
struct client_exchange : std::enable_shared_from_this<client_exchange> {
  std::shared_ptr<rdma_context> ctx;
  detail::byte_stream& carrier;
  std::shared_ptr<rdma_stream> stream;
  std::function<void(rpc_error, std::shared_ptr<rdma_stream>)> done;
  std::string out;
  std::vector<asio::const_buffer> out_buffers;  // unchanged until the write completes (TLS)
  std::uint64_t writes = 0;
  char header[protocol::header_size];
  protocol::frame_header answer;
  std::string body;
  char* read_data = nullptr;
  std::size_t read_left = 0;
  void (client_exchange::*read_then)() = nullptr;

  client_exchange(std::shared_ptr<rdma_context> c, detail::byte_stream& s,
                  std::function<void(rpc_error, std::shared_ptr<rdma_stream>)> d)
      : ctx(std::move(c)), carrier(s), done(std::move(d)) {}

  void finish(rpc_error e) {
    if (e && stream) {
      stream->close();
      stream.reset();
    }
    auto d = std::move(done);
    d(std::move(e), std::move(stream));
  }

  // A failed read or write. TLS refusing (an alert, a bad record) is reported as TLS's
  // failure, as a TLS client without RDMA would report it; the rest is the setup's.
  void fail_io(const std::error_code& ec, const std::string& what) {
    if (carrier.is_tls() && ec.category() == asio::error::get_ssl_category()) {
      return finish({rpc_errc::connect_failed, "TLS failed during RDMA setup: " +
                                                   detail::describe_tls_failure(ec, X509_V_OK)});
    }
    finish({rpc_errc::connect_failed, what});
  }

  void start() {
    out = setup_frame(rpc_errc::ok, encode_setup(describe(*stream, ctx->provider())));
    out_buffers = {asio::buffer(out)};
    carrier.async_write(out_buffers, &writes, nullptr, nullptr,
                        [self = shared_from_this()](const std::error_code& ec, std::size_t) {
                          if (ec) return self->fail_io(ec, "RDMA setup: " + ec.message());
                          self->read_header();
                        });
  }

  // Reads all of [data, data + size), then runs `then` (a read may bring part of it: TLS
  // hands over what one record holds). Its state lives here, as an RDMA or TLS read's
  // handler must stay small.
  void read_exactly(char* data, std::size_t size, void (client_exchange::*then)()) {
    read_data = data;
    read_left = size;
    read_then = then;
    read_more();
  }

  void read_more() {
    if (read_left == 0) return (this->*read_then)();
    carrier.async_read_some(read_data, read_left, nullptr,
                            [self = shared_from_this()](const std::error_code& ec, std::size_t n) {
                              if (ec) {
                                return self->fail_io(ec, "RDMA setup: no answer from the server (" +
                                                             ec.message() + ")");
                              }
                              self->read_data += n;
                              self->read_left -= n;
                              self->read_more();
                            });
  }

  void read_header() { read_exactly(header, sizeof header, &client_exchange::on_header); }

  void on_header() {
    if (protocol::decode_header(header, answer, max_setup_body) != protocol::header_errc::ok ||
        (answer.type != protocol::msg_type::rdma_setup &&
         answer.type != protocol::msg_type::response)) {
      return finish(
          {rpc_errc::protocol_error, "RDMA setup: the server's answer is not corvid protocol"});
    }
    body.resize(answer.payload_size());
    read_exactly(body.data(), body.size(), &client_exchange::on_body);
  }

  void on_body() {
    const protocol::frame_header& h = answer;
    if (h.status != rpc_errc::ok) {
      std::string message;
      if (codec::decode(std::string_view(body).substr(0, h.body_length), message) !=
          codec::decode_errc::ok) {
        message = "no reason given";
      }
      // A server without RDMA answers with a plain error response (protocol_error), one
      // with RDMA refuses with an rdma_setup frame (e.g. server_busy at its pool watermark).
      return finish({h.status, "server refused the RDMA connection: " + message});
    }
    if (h.type != protocol::msg_type::rdma_setup) {
      return finish({rpc_errc::protocol_error, "RDMA setup: unexpected answer from the server"});
    }
    setup_message peer;
    if (auto why = decode_setup(body, peer); !why.empty()) {
      return finish({rpc_errc::protocol_error, "RDMA setup: " + why});
    }
    if (auto e = stream->connect(remote_of(peer), peer.max_message)) {
      return finish({rpc_errc::connect_failed, "RDMA setup: " + e.message()});
    }
    // Tell the server our queue pair works (its setup bound, ibv_config::setup_timeout).
    if (auto e = stream->announce()) {
      return finish({rpc_errc::connect_failed, "RDMA setup: " + e.message()});
    }
    finish({});
  }
};

}  // namespace

void client_handshake(std::shared_ptr<rdma_context> ctx, detail::byte_stream& carrier,
                      rdma_counters* counters,
                      std::function<void(rpc_error, std::shared_ptr<rdma_stream>)> done) {
  auto& reactor = static_cast<asio::io_context&>(carrier.socket().get_executor().context());
  auto stream = rdma_stream::create(ctx, reactor, counters);
  if (!stream) {
    auto e = std::move(stream).error();
    done(rpc_error(e.code(), "RDMA setup: " + e.message()), nullptr);
    return;
  }
  auto x = std::make_shared<client_exchange>(std::move(ctx), carrier, std::move(done));
  x->stream = std::move(*stream);
  x->start();
}

}  // namespace corvid::rdma
