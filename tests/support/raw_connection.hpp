#pragma once
// A blocking loopback socket speaking frames by hand: for requests the corvid client would not
// send (broken ones, or several in exactly one write) and for reading what the server answers.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <corvid/codec/codec.hpp>
#include <corvid/protocol/frame_header.hpp>
#include <corvid/protocol/function_id.hpp>

#include <sys/socket.h>
#include <sys/time.h>

namespace corvid::test {

// A request frame for F with `timeout_ms` in its header (0: no deadline); `args` are encoded
// in turn, so they must match F's parameters as the server decodes them.
template <auto F, class... A>
std::string request_frame(std::uint64_t id, std::uint32_t timeout_ms, const A&... args) {
  std::string bytes(protocol::header_size, '\0');
  codec::string_sink sink{bytes};
  (codec::encode(sink, args), ...);
  protocol::frame_header h;
  h.type = protocol::msg_type::request;
  h.request_id = id;
  h.function_id = protocol::function_id<F>();
  h.timeout_ms = timeout_ms;
  h.body_length = static_cast<std::uint32_t>(bytes.size() - protocol::header_size);
  protocol::encode_header(h, bytes.data());
  return bytes;
}

class raw_connection {
 public:
  // Reads give up after 5 s, so a server that never answers fails the test instead of hanging it.
  explicit raw_connection(std::uint16_t port) : socket_(io_) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
    timeval tv{5, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  // One write: frames sent together arrive in the server's socket buffer together.
  void send(std::string_view bytes) { asio::write(socket_, asio::buffer(bytes)); }
  void shutdown_send() { socket_.shutdown(asio::ip::tcp::socket::shutdown_send); }

  template <auto F, class... A>
  void send_request(std::uint64_t id, std::uint32_t timeout_ms, const A&... args) {
    send(request_frame<F>(id, timeout_ms, args...));
  }
  // A protocol ping (a control frame, answered by the connection itself with a pong).
  void send_ping(std::uint64_t id) { send_header_only(protocol::msg_type::ping, id); }

  // A cancel frame for the call `id` (what a client sends when it gives up on a call).
  void send_cancel(std::uint64_t id) { send_header_only(protocol::msg_type::cancel, id); }

  // A frame that is a header alone, of `type`, for `id`.
  void send_header_only(protocol::msg_type type, std::uint64_t id) {
    protocol::frame_header h;
    h.type = type;
    h.request_id = id;
    std::string bytes(protocol::header_size, '\0');
    protocol::encode_header(h, bytes.data());
    send(bytes);
  }

  struct frame {
    protocol::frame_header header;
    std::string body;
    std::string attachment;
    // The error message of an error response.
    std::string message() const {
      std::string m;
      codec::decode(body, m);
      return m;
    }
  };
  // The next frame, or nullopt on EOF, error or the 5 s timeout.
  std::optional<frame> read_frame() {
    char hdr[protocol::header_size];
    std::error_code ec;
    asio::read(socket_, asio::buffer(hdr), ec);
    if (ec) return std::nullopt;
    frame f;
    if (protocol::decode_header(hdr, f.header, UINT32_MAX) != protocol::header_errc::ok) {
      return std::nullopt;
    }
    f.body.resize(f.header.body_length);
    f.attachment.resize(f.header.attachment_length);
    asio::read(socket_, asio::buffer(f.body), ec);
    if (!ec) asio::read(socket_, asio::buffer(f.attachment), ec);
    if (ec) return std::nullopt;
    return f;
  }
  // True when the peer closes the connection (read returns EOF) within the timeout.
  bool closed_by_peer() {
    char c;
    std::error_code ec;
    for (;;) {
      socket_.read_some(asio::buffer(&c, 1), ec);
      if (ec) return ec == asio::error::eof || ec == asio::error::connection_reset;
    }
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
};

}  // namespace corvid::test
