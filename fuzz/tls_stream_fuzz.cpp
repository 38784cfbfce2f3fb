// Fuzzes a live corvid::rpc_server with TLS on (rpc_server::init_tls): the first-byte peek
// (0x16 starts a handshake, anything else is a plaintext client), the handshake driven through
// the TLS channel's BIO, the handshake timeout, and framing over TLS records split anywhere.
// Two servers run for the whole session (started in LLVMFuzzerInitialize, 1 reactor thread
// each, an 8 KiB frame limit, a 500 ms handshake timeout, a 1 s idle timeout, a 4 MiB memory
// limit: about 40 TLS sessions' worth), one TLS-only and one that also serves plaintext
// (tls_config::allow_plaintext). Certificates are made at run time (tests/support).
//
// Byte 0 of an input selects the mode:
//  * raw (bit 0 clear): the rest goes to the socket as is (garbage, edited or truncated
//    ClientHellos, plaintext frames), split in two writes at byte 1's fraction; bit 1 picks the
//    plaintext-accepting server; bit 2 keeps our write side open, so the server ends the
//    connection by its timeouts alone. Checked: the server closes within 3 s; a TLS-only
//    server answers a plaintext first byte with exactly one protocol_error frame (id 0); a
//    plaintext client of the other server gets valid response frames; a handshake gets TLS
//    records (handshake or alert) only.
//  * session (bit 0 set): an OpenSSL client completes a handshake with the TLS-only server
//    (it must succeed), then sends the rest as application data in up to four SSL_write calls
//    cut at bytes 1-3's fractions (so records split frames anywhere), reads the replies owed,
//    sends close_notify and half-closes. Checked: everything decrypted is complete valid
//    response frames and pongs, as many as a v1 receiver owes (docs/protocol.md: each request
//    and ping before the first bad header, then one error frame), and the server closes
//    within 2 s of our close.
// Every 32 inputs a fresh TLS rpc_client call must succeed, and the servers must hold no
// connection but that client's (abort otherwise).
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>

#include "corvid/client/rpc_client.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/runtime/tls_config.hpp"
#include "corvid/server/rpc_server.hpp"
#include "corvid/sync_wait.hpp"
#include "corvid/task.hpp"
#include "fuzz_socket.hpp"
#include "test_certs.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

// Global, like docs/protocol.md's example, so the doc's echo request is a valid seed.
std::string_view echo(std::string_view s) { return s; }

namespace {

namespace protocol = corvid::protocol;
using corvid::rpc_errc;

constexpr std::uint32_t max_frame = 8192;
constexpr auto handshake_timeout = std::chrono::milliseconds(500);
constexpr unsigned health_every = 32;

corvid::test::test_certs* certs = nullptr;  // both never destroyed: they live for the session
corvid::rpc_server* tls_only = nullptr;
corvid::rpc_server* mixed = nullptr;  // allow_plaintext
SSL_CTX* client_ctx = nullptr;

void die(const char* what) {
  std::fprintf(stderr, "tls_stream_fuzz: %s\n", what);
  std::abort();  // libFuzzer records the input and the stack
}
void check(bool ok, const char* what) {
  if (!ok) die(what);
}

corvid::rpc_server* start_server(bool allow_plaintext) {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 1;
  cfg.max_frame_size = max_frame;
  cfg.stop_timeout = std::chrono::milliseconds(500);
  cfg.idle_timeout = std::chrono::seconds(1);
  cfg.max_memory = corvid::memory_limit::bytes(4u << 20);
  auto* s = new corvid::rpc_server(cfg);
  s->register_handler<echo>();
  corvid::tls_config tls;
  tls.certificate_chain_file = certs->server_cert;
  tls.private_key_file = certs->server_key;
  tls.allow_plaintext = allow_plaintext;
  tls.handshake_timeout = handshake_timeout;
  if (auto ec = s->init_tls(tls)) die(("init_tls failed: " + ec.message()).c_str());
  if (auto ec = s->async_start()) die(("server start failed: " + ec.message()).c_str());
  return s;
}

corvid::task<corvid::rpc_error> connect_client(corvid::rpc_client& c, std::string ep) {
  co_return co_await c.connect(ep);
}
corvid::task<bool> echo_ok(corvid::rpc_client& c) {
  auto r = co_await c.call_for<echo>(std::chrono::seconds(5), std::string_view("ping"));
  co_return r.has_value() && *r == "ping";
}

// Waits up to 2 s for `server` to hold exactly `n` connections.
void expect_connections(const corvid::rpc_server& server, std::size_t n) {
  for (int i = 0; server.connection_count() != n; ++i) {
    check(i < 200, "health check: the server still holds fuzz connections");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void health_check() {
  corvid::rpc_client client;
  corvid::tls_config tls;
  tls.ca_file = certs->ca;
  if (auto ec = client.init_tls(tls)) die(("client init_tls failed: " + ec.message()).c_str());
  if (auto ec = corvid::sync_wait(
          connect_client(client, "127.0.0.1:" + std::to_string(tls_only->port())))) {
    die(("health check: connect failed: " + ec.message()).c_str());
  }
  check(corvid::sync_wait(echo_ok(client)), "health check: echo call over TLS failed");
  expect_connections(*tls_only, 1);
  expect_connections(*mixed, 0);
}

int connect_raw(const corvid::rpc_server& server, int timeout_s) {
  const int fd = corvid_fuzz::connect_loopback(server.port(), timeout_s);
  check(fd >= 0, "connect() failed");
  return fd;
}

// False if the server closed its side early (it may: a failed handshake, a framing error).
bool send_all(int fd, std::string_view bytes) {
  const auto r = corvid_fuzz::send_all(fd, bytes);
  if (r == corvid_fuzz::send_result::blocked) die("send blocked for 3 s");
  return r == corvid_fuzz::send_result::sent;
}

// Everything until the server closes (a reset counts as a close: the server closing with our
// bytes unread makes the kernel send one). A receive timeout means it never closed.
std::string read_to_eof(int fd) {
  std::string got;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      got.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) die("the server did not close");
    return got;
  }
}

// Checks that `got` is a sequence of valid response frames and pongs (complete ones, unless
// `prefix`: then the last may be cut, after a reset). Returns how many, and the first status
// other than ok in `first_error` (ok if none).
int check_frames(std::string_view got, bool prefix, rpc_errc& first_error,
                 std::uint64_t& first_error_id) {
  int frames = 0;
  first_error = rpc_errc::ok;
  while (!got.empty()) {
    protocol::frame_header h;
    if (prefix && got.size() < protocol::header_size) break;
    check(got.size() >= protocol::header_size, "reply stream ends inside a header");
    check(protocol::decode_header(got.data(), h, UINT32_MAX) == protocol::header_errc::ok,
          "reply header does not decode");
    check(h.type == protocol::msg_type::response || h.type == protocol::msg_type::pong,
          "reply is neither a response nor a pong");
    // A pong states the server's reactor count (io_threads = 1 here).
    const std::uint32_t reactors = h.type == protocol::msg_type::pong ? 1 : 0;
    check(h.function_id == 0 && h.reactors == reactors && h.flags == 0 && h.timeout_ms == 0,
          "reply function id / reactors / flags / timeout not as expected");
    check(h.payload_size() <= max_frame, "reply over the server's own limit");
    if (prefix && got.size() < h.frame_size()) break;
    check(got.size() >= h.frame_size(), "reply stream ends inside a frame");
    if (h.status != rpc_errc::ok) {
      std::string message;
      const std::string_view body = got.substr(protocol::header_size, h.body_length);
      check(corvid::codec::decode(body, message) == corvid::codec::decode_errc::ok,
            "error reply body is not one string");
      if (first_error == rpc_errc::ok) {
        first_error = h.status;
        first_error_id = h.request_id;
      }
    }
    got.remove_prefix(h.frame_size());
    ++frames;
  }
  return frames;
}

// Replies a v1 server owes for `stream` (echo is a sync handler: cancels excuse nothing):
// one per request and ping before the first bad header, plus one error frame for that header
// (`bad`). A response header, and a whole rdma_setup (no init_ibv here) or request with id 0,
// end it the same way.
int frames_owed(std::string_view stream, bool& bad) {
  int n = 0;
  bad = false;
  while (stream.size() >= protocol::header_size) {
    protocol::frame_header h;
    if (protocol::decode_header(stream.data(), h, max_frame) != protocol::header_errc::ok ||
        h.type == protocol::msg_type::response) {
      bad = true;
      return n + 1;
    }
    if (stream.size() < h.frame_size()) return n;
    if (h.type == protocol::msg_type::rdma_setup ||
        (h.type == protocol::msg_type::request && h.request_id == 0)) {
      bad = true;
      return n + 1;
    }
    if (h.type != protocol::msg_type::cancel) ++n;
    stream.remove_prefix(h.frame_size());
  }
  return n;
}

// --- raw mode ---------------------------------------------------------------------------

void run_raw(std::uint8_t options, std::uint8_t cut_at, std::string_view bytes) {
  const bool plaintext_ok = options & 2;
  const bool keep_open = options & 4;
  const corvid::rpc_server& server = plaintext_ok ? *mixed : *tls_only;
  // Open write side: only the handshake timeout (500 ms) or the idle timeout (1 s) ends it.
  const int fd = connect_raw(server, 3);
  const std::size_t cut = bytes.size() * cut_at / 255;
  if (send_all(fd, bytes.substr(0, cut))) send_all(fd, bytes.substr(cut));
  if (!keep_open) ::shutdown(fd, SHUT_WR);
  const std::string got = read_to_eof(fd);
  ::close(fd);
  if (bytes.empty() || got.empty()) return;  // closed without a word: always allowed
  if (bytes[0] == 0x16) {
    // A handshake's answers: TLS records, a ServerHello (0x16) or an alert (0x15).
    check(got[0] == 0x16 || got[0] == 0x15, "a handshake answered with something not TLS");
    return;
  }
  rpc_errc err = rpc_errc::ok;
  std::uint64_t err_id = 0;
  const int frames = check_frames(got, true, err, err_id);
  if (!plaintext_ok) {
    check(frames <= 1 && (frames == 0 || (err == rpc_errc::protocol_error && err_id == 0)),
          "a plaintext client of a TLS-only server got more than one protocol_error frame");
  }
}

// --- session mode -----------------------------------------------------------------------

enum class read_end { enough, closed, timed_out };

// Reads decrypted bytes into `got` until `frames` complete frames are there (never, for -1),
// the server closes (orderly or not), or the socket's 2 s receive timeout passes.
read_end ssl_read_frames(SSL* ssl, int frames, std::string& got) {
  char buf[16384];
  for (;;) {
    rpc_errc e;
    std::uint64_t id;
    if (frames >= 0 && check_frames(got, true, e, id) >= frames) return read_end::enough;
    errno = 0;
    const int n = SSL_read(ssl, buf, sizeof buf);
    if (n > 0) {
      got.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    const bool timeout = SSL_get_error(ssl, n) == SSL_ERROR_WANT_READ || errno == EAGAIN ||
                         errno == EWOULDBLOCK;
    ERR_clear_error();
    return timeout ? read_end::timed_out : read_end::closed;
  }
}

void run_session(const std::uint8_t* cuts, std::string_view bytes) {
  const int fd = connect_raw(*tls_only, 2);
  SSL* ssl = SSL_new(client_ctx);
  SSL_set_fd(ssl, fd);
  check(SSL_connect(ssl) == 1, "TLS handshake with the server failed");
  // Up to four SSL_write calls: each becomes at least one record, so frames split anywhere.
  std::size_t from = 0;
  bool sent = true;
  for (int i = 0; i <= 3 && sent; ++i) {
    std::size_t to = i < 3 ? bytes.size() * cuts[i] / 255 : bytes.size();
    if (to <= from) continue;
    sent = SSL_write(ssl, bytes.data() + from, static_cast<int>(to - from)) > 0;
    from = to;
  }
  bool bad = false;
  const int owed = frames_owed(bytes, bad);
  std::string got;
  // The replies owed first (a timeout here leaves the checks below to tell what is missing),
  // then close_notify and our FIN, then the rest until the server closes.
  if (ssl_read_frames(ssl, owed, got) != read_end::closed) {
    SSL_shutdown(ssl);
    ::shutdown(fd, SHUT_WR);
    check(ssl_read_frames(ssl, -1, got) == read_end::closed,
          "the server did not close within 2 s of our close_notify");
  }
  SSL_free(ssl);
  ::close(fd);
  rpc_errc err = rpc_errc::ok;
  std::uint64_t err_id = 0;
  // After a bad header the server closes with our bytes unread: a reset may cut the replies.
  const int frames = check_frames(got, bad || !sent, err, err_id);
  if (!bad && sent) {
    check(frames == owed, "replies missing (or extra) for complete requests");
  } else {
    check(frames <= owed, "more replies than requests");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::signal(SIGPIPE, SIG_IGN);  // SSL_write to a socket the server closed
  certs = new corvid::test::test_certs();
  tls_only = start_server(false);
  mixed = start_server(true);
  client_ctx = SSL_CTX_new(TLS_client_method());
  check(client_ctx != nullptr, "SSL_CTX_new failed");
  check(SSL_CTX_load_verify_locations(client_ctx, certs->ca.c_str(), nullptr) == 1,
        "cannot load the test CA");
  SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, nullptr);
  // A close without close_notify (after a framing error) reads as EOF, not as an error.
  SSL_CTX_set_options(client_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  health_check();
  return 0;
}

// Input: byte 0 = mode and options (see the top), bytes 1-3 = cut points (fractions /255;
// raw mode uses byte 1 only), then the bytes to send.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static unsigned runs = 0;
  if (size < 4) return -1;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 4, size - 4);
  if (data[0] & 1) {
    run_session(data + 1, bytes);
  } else {
    run_raw(data[0], data[1], bytes);
  }
  if (++runs % health_every == 0) health_check();
  return 0;
}
