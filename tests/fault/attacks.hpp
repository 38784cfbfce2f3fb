#pragma once
// Hostile clients, on raw POSIX sockets so they can do what rpc_client never does: dribble a
// header, lie about lengths, vanish mid-frame, or open and drop connections by the thousand.
// Used by hostile_test.cpp (bounded runs with assertions) and attack_bench.cpp (a well-behaved
// client's latency while these run).
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <poll.h>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include <corvid/codec/codec.hpp>
#include <corvid/protocol/frame_header.hpp>

#include "process_memory.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace corvid_attack {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// A connected TCP socket to 127.0.0.1:port (-1 on failure), closed by the destructor.
class raw_socket {
 public:
  // `send_buffer` > 0 shrinks the kernel's send buffer (before connecting, so the window is
  // sized to it): sends then progress only as fast as the server reads.
  // `receive_buffer` > 0 shrinks the receive buffer the same way: a peer that never reads
  // then leaves its unread replies in the server's memory, not in the kernel's.
  explicit raw_socket(std::uint16_t port, int send_buffer = 0, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && send_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
    }
    if (fd_ >= 0 && receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
  }
  ~raw_socket() { close(); }
  raw_socket(raw_socket&& o) noexcept : fd_(o.fd_), in_(std::move(o.in_)) { o.fd_ = -1; }
  raw_socket& operator=(raw_socket&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = std::exchange(o.fd_, -1);
      in_ = std::move(o.in_);
    }
    return *this;
  }
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // All of `bytes`, or false if the peer is gone.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Like send(), but gives up (false) once `stop` is set: a send blocked on a server that
  // reads slowly must not keep the attacker's thread from being joined.
  bool send_until(std::string_view bytes, const std::atomic<bool>& stop) {
    while (!bytes.empty()) {
      if (stop.load()) return false;
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Closes with an RST instead of a FIN (SO_LINGER 0).
  void reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Waits up to `limit` for the peer to close (EOF or RST), discarding what it sends.
  bool closed_by_peer_within(std::chrono::milliseconds limit) {
    const auto until = steady::now() + limit;
    char buf[4096];
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - steady::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      const auto n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
    }
  }
  struct frame {
    corvid::protocol::frame_header header;
    std::string body;
    // The message of an error reply (its body is a codec string).
    std::string message() const {
      std::string m;
      corvid::codec::decode(body, m);
      return m;
    }
  };
  // The next whole frame from the peer, or nullopt if none arrived within `limit` (or the
  // peer closed, or sent a header that does not parse).
  std::optional<frame> read_frame(std::chrono::milliseconds limit) {
    const auto until = steady::now() + limit;
    for (;;) {
      if (in_.size() >= corvid::protocol::header_size) {
        frame f;
        if (corvid::protocol::decode_header(in_.data(), f.header, UINT32_MAX) !=
            corvid::protocol::header_errc::ok) {
          return std::nullopt;
        }
        if (in_.size() >= f.header.frame_size()) {
          f.body = in_.substr(corvid::protocol::header_size, f.header.body_length);
          in_.erase(0, f.header.frame_size());
          // The server pings a connection it has paused (to find a peer that closed); these
          // raw peers wait for responses and pongs, so its pings are read and skipped.
          if (f.header.type == corvid::protocol::msg_type::ping) continue;
          return f;
        }
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - steady::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[64 << 10];
      const auto n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return std::nullopt;
      if (n > 0) in_.append(buf, static_cast<std::size_t>(n));
    }
  }
  // True if the peer has closed already (non-blocking check).
  bool peer_closed() {
    char buf[4096];
    for (;;) {
      const auto n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) continue;
      return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    }
  }

 private:
  int fd_ = -1;
  std::string in_;  // bytes read but not yet returned as a frame
};

// Header bytes of a frame of any type (including ones a client must not send).
inline std::string header_bytes(corvid::protocol::msg_type type, std::uint64_t id,
                                std::uint32_t function_id = 0, std::uint32_t body_length = 0,
                                std::uint32_t attachment_length = 0) {
  corvid::protocol::frame_header h;
  h.type = type;
  h.request_id = id;
  h.function_id = function_id;
  h.body_length = body_length;
  h.attachment_length = attachment_length;
  std::string out(corvid::protocol::header_size, '\0');
  corvid::protocol::encode_header(h, out.data());
  return out;
}
// A cancel frame for request `id` (header only).
inline std::string cancel_frame(std::uint64_t id) {
  return header_bytes(corvid::protocol::msg_type::cancel, id);
}
// A ping frame: the server answers a pong with the same id after every frame before it.
inline std::string ping_frame(std::uint64_t id) {
  return header_bytes(corvid::protocol::msg_type::ping, id);
}
// A request whose body is `body` as given (hand-encoded arguments).
inline std::string raw_request(std::uint64_t id, std::uint32_t function_id, std::string_view body) {
  return header_bytes(corvid::protocol::msg_type::request, id, function_id,
                      static_cast<std::uint32_t>(body.size())) +
         std::string(body);
}
// A request whose body is the codec encoding of `args`.
template <class... Args>
std::string encoded_request(std::uint64_t id, std::uint32_t function_id, const Args&... args) {
  std::string body;
  corvid::codec::string_sink sink{body};
  (corvid::codec::encode(sink, args), ...);
  return raw_request(id, function_id, body);
}
// Appends `v` as a codec varint (unsigned LEB128): a count or a length.
inline void append_varint(std::string& out, std::uint32_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
// The body of a call whose one parameter is a counted sequence (vector, set) of elements that
// take one byte on the wire: the count `n`, then `n` zero bytes (empty optionals, strings or
// vectors; decoded, each takes sizeof(element)).
inline std::string claimed_count_body(std::uint32_t n) {
  std::string b;
  append_varint(b, n);
  b.append(n, '\0');
  return b;
}
// The body of a call taking std::map<std::uint32_t, std::string>: `n` entries of 5 bytes
// (keys 0..n-1 in order, empty strings), each a tree node of ~80 bytes decoded.
inline std::string u32_string_map_body(std::uint32_t n) {
  std::string b;
  append_varint(b, n);
  for (std::uint32_t k = 0; k < n; ++k) {
    char key[4];
    std::memcpy(key, &k, 4);  // little-endian host (the codec asserts it)
    b.append(key, 4);
    b.push_back('\0');
  }
  return b;
}

using corvid::test::reset_vm_hwm;
using corvid::test::vm_hwm;
using corvid::test::vm_rss;

// Header bytes of a request for `function_id` whose body claims `body_length` bytes.
inline std::string request_header(std::uint64_t id, std::uint32_t function_id,
                                  std::uint32_t body_length, std::uint32_t attachment_length = 0) {
  return header_bytes(corvid::protocol::msg_type::request, id, function_id, body_length,
                      attachment_length);
}
// A complete request frame: echo-style call with one string argument.
inline std::string string_request(std::uint64_t id, std::uint32_t function_id,
                                  std::string_view arg) {
  std::string body;
  corvid::codec::string_sink sink{body};
  corvid::codec::encode(sink, arg);
  return request_header(id, function_id, static_cast<std::uint32_t>(body.size())) + body;
}

// Each attack runs until `stop`, counting what it did in `actions`.
struct attack_context {
  std::uint16_t port;
  std::uint32_t echo_id;  // function id of a registered echo(string_view)
  std::atomic<bool>& stop;
  std::atomic<std::uint64_t> actions{0};
};

// Slowloris: `n` connections each dribble a request header one byte per `gap`; a connection
// the server closes is replaced by a new one.
inline void slowloris(attack_context& a, int n, std::chrono::milliseconds gap) {
  const std::string header = request_header(1, a.echo_id, 16);
  std::vector<raw_socket> conns;
  std::vector<std::size_t> sent;
  while (!a.stop.load()) {
    while (static_cast<int>(conns.size()) < n) {
      conns.emplace_back(a.port);
      sent.push_back(0);
    }
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (!conns[i].ok() || conns[i].peer_closed() ||
          !conns[i].send(std::string_view(header).substr(sent[i] % header.size(), 1))) {
        conns[i] = raw_socket(a.port);  // the server dropped it: come back
        sent[i] = 0;
        ++a.actions;
        continue;
      }
      ++sent[i];
    }
    const auto until = steady::now() + gap;
    while (!a.stop.load() && steady::now() < until) std::this_thread::sleep_for(10ms);
  }
}

// Connection churn: open, maybe send part of a frame or a whole request, then close with a FIN
// or an RST without reading.
inline void churn(attack_context& a, std::minstd_rand::result_type seed) {
  std::minstd_rand rng(seed);
  const std::string req = string_request(7, a.echo_id, "churn");
  while (!a.stop.load()) {
    raw_socket s(a.port);
    if (!s.ok()) continue;
    switch (rng() % 4) {
      case 0:
        break;
      case 1:
        s.send(std::string_view(req).substr(0, rng() % req.size()));
        break;
      case 2:
        s.send(req);
        break;
      default:
        s.send(req + req);
        break;
    }
    if (rng() % 2) s.reset();
    ++a.actions;
  }
}

// Large transfers cut off: a 1 MiB echo request sent in part (or whole, then the connection is
// dropped before the 1 MiB reply is read), then FIN or RST. The socket's send buffer is small,
// so the attacker pushes only as fast as the server reads: the cut lands while the server is
// mid-frame (with the kernel's default buffers a whole 1 MiB request sat in loopback buffers
// before the server even accepted the connection), and the attack paces itself to the server
// instead of piling up connections that a slow (sanitizer) build cannot drain in time. Stops
// after `max_actions` connections, or at `stop`.
inline void large_disconnects(attack_context& a, std::minstd_rand::result_type seed,
                              std::uint64_t max_actions = UINT64_MAX) {
  std::minstd_rand rng(seed);
  const std::string req = string_request(9, a.echo_id, std::string(1 << 20, 'x'));
  for (std::uint64_t done = 0; done < max_actions && !a.stop.load(); ++done) {
    raw_socket s(a.port, 64 << 10);
    if (!s.ok()) continue;
    const std::size_t cut = rng() % 3 == 0 ? req.size() : rng() % req.size();
    s.send_until(std::string_view(req).substr(0, cut), a.stop);
    if (rng() % 2) s.reset();
    ++a.actions;
  }
}

// Liars: a header announcing more body than follows, then a stall until the server closes;
// or a header announcing less than follows (the rest is garbage where a header should be).
inline void liars(attack_context& a, std::minstd_rand::result_type seed) {
  std::minstd_rand rng(seed);
  while (!a.stop.load()) {
    raw_socket s(a.port);
    if (!s.ok()) continue;
    if (rng() % 2) {
      s.send(request_header(3, a.echo_id, 1000) + std::string(10, 'a'));  // 990 bytes short
      while (!a.stop.load() && !s.closed_by_peer_within(100ms)) {
      }
    } else {
      std::string over = string_request(4, a.echo_id, "ok");
      over += std::string(64, '\x7f');  // not a header
      s.send(over);
      s.closed_by_peer_within(1000ms);
    }
    ++a.actions;
  }
}

}  // namespace corvid_attack
