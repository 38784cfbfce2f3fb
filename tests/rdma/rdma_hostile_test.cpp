// RDMA setup against hostile peers (issue 12): a peer that sends rdma_setup and never
// connects its queue pair, many of them (in total and from one address), and a provider
// string sized to make the refusal huge. Each test speaks the handshake over a raw TCP
// socket, describing a real queue pair of the tests' provider that is never connected.
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <unistd.h>
#include <vector>

#include <asio/io_context.hpp>

#include "corvid/codec/codec.hpp"
#include "corvid/protocol/frame_header.hpp"

#include "eventually.hpp"
#include "raw_server.hpp"
#include "rdma/handshake.hpp"
#include "rdma/rdma_context.hpp"
#include "rdma_support.hpp"
#include "slowdown.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace corvid_rdma_test {
namespace {

using corvid::rdma::rdma_context;
using corvid::rdma::rdma_stream;

// A queue pair the attacker describes and never connects: created on the tests' provider
// with its own chunk size, so its chunks come from another pool than the server's.
struct dangling_qp {
  asio::io_context reactor;
  corvid::rdma::rdma_counters counters;
  std::shared_ptr<rdma_stream> stream;
  std::string provider;
  dangling_qp() {
    corvid::ibv_config c = test_ibv();
    c.chunk_size = 8192;
    auto ctx = rdma_context::open(c);
    if (!ctx) throw std::runtime_error(ctx.error().message());
    provider = (*ctx)->provider();
    auto s = rdma_stream::create(*ctx, reactor, &counters);
    if (!s) throw std::runtime_error(s.error().message());
    stream = std::move(*s);
  }
  ~dangling_qp() {
    stream->close();
    reactor.run_for(100ms);
  }
  std::string setup_frame() const {
    return corvid::rdma::setup_frame(
        corvid::rpc_errc::ok,
        corvid::rdma::encode_setup(corvid::rdma::describe(*stream, provider)));
  }
};

// A raw TCP connection to the server, from `source` (any 127.0.0.0/8 address is this host).
struct raw_conn {
  int fd = -1;
  raw_conn(std::uint16_t port, const char* source = "127.0.0.1") {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &src.sin_addr);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0)
      throw std::runtime_error("bind to " + std::string(source) + " failed");
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&dst), sizeof dst) != 0)
      throw std::runtime_error("connect failed");
  }
  ~raw_conn() { ::close(fd); }
  void send_all(const std::string& bytes) const {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += static_cast<std::size_t>(n);
    }
  }
  // The server's answer: its header, and its body unless that is over max_body (then empty).
  std::optional<std::pair<corvid::protocol::frame_header, std::string>> read_reply(
      std::chrono::milliseconds timeout, std::size_t max_body = 1 << 20) const {
    char h[corvid::protocol::header_size];
    if (!read_exact(h, sizeof h, timeout)) return std::nullopt;
    corvid::protocol::frame_header hdr;
    if (corvid::protocol::decode_header(h, hdr, 1u << 30) != corvid::protocol::header_errc::ok)
      return std::nullopt;
    std::string body;
    if (hdr.payload_size() <= max_body) {
      body.resize(hdr.payload_size());
      if (!read_exact(body.data(), body.size(), timeout)) return std::nullopt;
    }
    return std::make_pair(hdr, body);
  }
  // Whether the server closes the connection (EOF or reset) within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) const {
    char c;
    set_timeout(timeout);
    const ssize_t n = ::recv(fd, &c, 1, 0);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

 private:
  void set_timeout(std::chrono::milliseconds t) const {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(t.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  bool read_exact(char* p, std::size_t n, std::chrono::milliseconds timeout) const {
    set_timeout(timeout);
    while (n > 0) {
      const ssize_t r = ::recv(fd, p, n, 0);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }
};

std::uint16_t port_of(rdma_server& s) { return s.server().port(); }

// Chunks the server's pool lends out now (its config's pool: same provider and chunk size).
std::size_t server_chunks_in_use(const corvid::ibv_config& cfg) {
  auto ctx = rdma_context::open(cfg);
  if (!ctx) throw std::runtime_error(ctx.error().message());
  return (*ctx)->pool().stats().in_use;
}

corvid::ibv_config hostile_server_config() {
  corvid::ibv_config c = test_ibv();
  c.chunk_size = 16 * 1024;  // a pool of its own, apart from other tests' and the attacker's
  return c;
}

std::string error_text(const std::string& body) {
  std::string m;
  if (corvid::codec::decode(body, m) != corvid::codec::decode_errc::ok) return "(undecodable)";
  return m;
}

// Found by a hostile review: queue pairs that never connect held their chunks for as long as
// the TCP connection stayed open. Now the connection is closed after setup_timeout.
TEST(rdma_hostile, a_queue_pair_that_never_connects_is_closed_after_the_setup_timeout) {
  corvid::ibv_config cfg = hostile_server_config();
  cfg.setup_timeout = 500ms;
  rdma_server srv(cfg);
  dangling_qp attacker;
  raw_conn conn(port_of(srv));
  conn.send_all(attacker.setup_frame());
  const auto reply = conn.read_reply(10s);
  ASSERT_TRUE(reply) << "no answer to rdma_setup";
  ASSERT_EQ(reply->first.status, corvid::rpc_errc::ok) << error_text(reply->second);
  EXPECT_GT(server_chunks_in_use(cfg), 0u);
  EXPECT_TRUE(conn.closed_within(10s)) << "the never-connected queue pair was kept";
  // Its chunks are back in the pool.
  for (int i = 0; i < 100 && server_chunks_in_use(cfg) != 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(server_chunks_in_use(cfg), 0u);
  // A real client still connects and calls.
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint(), test_ibv());
  auto r = run(client.call<echo>("still here"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "still here");
}

// A working client is out of setup at once (its empty SEND): the timeout never cuts it, even
// when it makes no call for longer than the timeout.
TEST(rdma_hostile, an_idle_client_outlives_the_setup_timeout) {
  corvid::ibv_config cfg = hostile_server_config();
  cfg.setup_timeout = 300ms;
  rdma_server srv(cfg);
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint(), test_ibv());
  std::this_thread::sleep_for(1s);  // about time: idle for three setup timeouts
  EXPECT_TRUE(client.is_connected());
  auto r = run(client.call<add>(2, 3));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 5);
}

// At most max_connections_in_setup at once: the next is refused with server_busy, and
// places free up as those connections go.
TEST(rdma_hostile, setups_past_the_total_cap_are_refused_server_busy) {
  corvid::ibv_config cfg = hostile_server_config();
  cfg.setup_timeout = 60s;
  cfg.max_connections_in_setup = 2;
  cfg.max_connections_in_setup_per_peer = 100;
  rdma_server srv(cfg);
  std::vector<std::unique_ptr<dangling_qp>> qps;
  std::vector<std::unique_ptr<raw_conn>> conns;
  for (int i = 0; i < 3; ++i) {
    qps.push_back(std::make_unique<dangling_qp>());
    conns.push_back(std::make_unique<raw_conn>(port_of(srv)));
    conns.back()->send_all(qps.back()->setup_frame());
    const auto reply = conns.back()->read_reply(10s);
    ASSERT_TRUE(reply) << "no answer to rdma_setup " << i;
    if (i < 2) {
      EXPECT_EQ(reply->first.status, corvid::rpc_errc::ok) << error_text(reply->second);
    } else {
      EXPECT_EQ(reply->first.status, corvid::rpc_errc::server_busy)
          << "a third connection in setup was accepted past the cap of 2";
      EXPECT_NE(error_text(reply->second).find("max_connections_in_setup"), std::string::npos);
    }
  }
  // The two dangling ones leave: their places are free again.
  conns.clear();
  ASSERT_TRUE(corvid::test::eventually([&] { return srv.server().connection_count() == 0; },
                                       corvid::test::patience(5s)));
  corvid::rpc_client client;
  connect_rdma(client, srv.endpoint(), test_ibv());
  auto r = run(client.call<echo>("after"));
  ASSERT_TRUE(r) << r.error().message();
}

// One address cannot take every place: its setups past the per-peer cap are refused with
// server_busy before any chunk is taken, while a client from another address connects and
// calls.
TEST(rdma_hostile, one_address_past_the_per_peer_cap_is_refused_and_others_connect) {
  corvid::ibv_config cfg = hostile_server_config();
  cfg.setup_timeout = 60s;
  cfg.max_connections_in_setup = 16;
  cfg.max_connections_in_setup_per_peer = 2;
  rdma_server srv(cfg);
  std::vector<std::unique_ptr<dangling_qp>> qps;
  std::vector<std::unique_ptr<raw_conn>> conns;
  int accepted = 0, busy = 0;
  for (int i = 0; i < 4; ++i) {
    qps.push_back(std::make_unique<dangling_qp>());
    conns.push_back(std::make_unique<raw_conn>(port_of(srv), "127.0.0.2"));
    conns.back()->send_all(qps.back()->setup_frame());
    const auto reply = conns.back()->read_reply(10s);
    ASSERT_TRUE(reply) << "no answer to rdma_setup " << i;
    if (reply->first.status == corvid::rpc_errc::ok) {
      ++accepted;
    } else {
      EXPECT_EQ(reply->first.status, corvid::rpc_errc::server_busy) << error_text(reply->second);
      EXPECT_NE(error_text(reply->second).find("max_connections_in_setup_per_peer"),
                std::string::npos)
          << error_text(reply->second);
      ++busy;
    }
  }
  EXPECT_EQ(accepted, 2) << "of 4 setups from 127.0.0.2 (cap 2 per peer)";
  EXPECT_EQ(busy, 2);
  corvid::rpc_client client;  // from 127.0.0.1
  connect_rdma(client, srv.endpoint(), test_ibv());
  auto r = run(client.call<echo>("other host"));
  ASSERT_TRUE(r) << r.error().message();
}

// The refusal of a provider mismatch quoted the client's provider string whole: a 1 MiB
// string made a 1 MiB error reply (64 MiB with the default frame limit).
TEST(rdma_hostile, the_refusal_does_not_echo_an_attacker_sized_provider) {
  rdma_server srv(hostile_server_config());
  dangling_qp qp;
  corvid::rdma::setup_message m = corvid::rdma::describe(*qp.stream, qp.provider);
  for (const std::size_t size : {std::size_t{3000}, std::size_t{1} << 20}) {
    m.provider.assign(size, 'A');
    raw_conn conn(port_of(srv));
    conn.send_all(corvid::rdma::setup_frame(corvid::rpc_errc::ok, corvid::rdma::encode_setup(m)));
    const auto reply = conn.read_reply(10s, 4096);
    ASSERT_TRUE(reply) << "no answer to rdma_setup with a " << size << "-byte provider";
    EXPECT_NE(reply->first.status, corvid::rpc_errc::ok);
    EXPECT_LE(reply->first.payload_size(), 512u) << "a " << size << "-byte provider string made a "
                                                 << reply->first.payload_size() << "-byte refusal";
  }
}

// docs/protocol.md: rdma_setup "is only valid as the first frame of a connection". After a
// request was served on TCP, the server would switch transports under a peer whose replies
// may still be in flight: it refuses with protocol_error (id 0) and closes, taking no chunks.
TEST(rdma_hostile, rdma_setup_after_a_request_is_a_protocol_error) {
  corvid::ibv_config cfg = hostile_server_config();
  rdma_server srv(cfg);
  dangling_qp attacker;
  raw_conn conn(port_of(srv));
  std::string body;
  corvid::codec::string_sink sink{body};
  corvid::codec::encode(sink, std::string_view("first"));
  corvid::protocol::frame_header h;
  h.type = corvid::protocol::msg_type::request;
  h.request_id = 1;
  h.function_id = corvid::protocol::function_id<echo>();
  h.body_length = static_cast<std::uint32_t>(body.size());
  std::string request(corvid::protocol::header_size, '\0');
  corvid::protocol::encode_header(h, request.data());
  conn.send_all(request + body);
  const auto answer = conn.read_reply(10s);
  ASSERT_TRUE(answer) << "the request got no reply";
  EXPECT_EQ(answer->first.status, corvid::rpc_errc::ok) << error_text(answer->second);
  conn.send_all(attacker.setup_frame());
  const auto refusal = conn.read_reply(10s);
  ASSERT_TRUE(refusal) << "no answer to the late rdma_setup";
  EXPECT_EQ(refusal->first.status, corvid::rpc_errc::protocol_error) << error_text(refusal->second);
  EXPECT_EQ(refusal->first.request_id, 0u);
  EXPECT_TRUE(conn.closed_within(10s));
  EXPECT_EQ(server_chunks_in_use(cfg), 0u) << "a refused setup took chunks";
}

// ---- a server whose queue pair never answers (ibv_config::ack_timeout, retry_count)

// How a client's first call ends against a fake server (corvid::test::raw_server) that
// answers its rdma_setup with a queue pair it never connects and keeps the TCP connection
// open: the client's sends go unacknowledged until its transport retries run out.
// (Connecting may already fail.)
corvid::rpc_error first_call_error(const corvid::ibv_config& ibv,
                                   std::chrono::milliseconds request_timeout) {
  corvid::test::raw_server srv;
  dangling_qp qp;
  corvid::client_config cc;
  cc.request_timeout = request_timeout;
  corvid::rpc_client client(cc);
  if (auto e = client.init_ibv(ibv)) return e;
  // Takes the one connection the client makes below; joined first, the client closed next.
  std::jthread answering([&] {
    try {
      srv.accept();
      if (!srv.read_frame().empty()) srv.send(qp.setup_frame());  // the client's rdma_setup
    } catch (const std::exception&) {  // the client hung up: its connect says why
    }
  });
  if (auto e = corvid::sync_wait(connect(client, srv.endpoint()))) return e;
  auto r = run(client.call<echo>("anyone there?"));
  return r ? corvid::rpc_error{} : r.error();
}

TEST(rdma_hostile, a_peer_that_never_acknowledges_fails_the_connection_after_the_ack_timeout) {
  corvid::ibv_config c = test_ibv();
  c.ack_timeout = 10;  // one try of about 4 ms
  c.retry_count = 0;
  const corvid::rpc_error e = first_call_error(c, 60s);
  EXPECT_EQ(e.code(), corvid::rpc_errc::connection_closed) << e.message();
  EXPECT_NE(e.message().find("ibv_config::ack_timeout"), std::string::npos) << e.message();
}

// The same peer with an ACK timeout of hours: the call ends by its own deadline, the
// connection still waiting for an acknowledgement. (With the default, 8 tries of 67 ms, the
// connection would fail first, with connection_closed.)
TEST(rdma_hostile, a_long_ack_timeout_keeps_waiting_for_the_peer) {
  corvid::ibv_config c = test_ibv();
  c.ack_timeout = 31;
  const corvid::rpc_error e = first_call_error(c, corvid::test::patience(2s));
  EXPECT_EQ(e.code(), corvid::rpc_errc::timeout) << e.message();
}

TEST(rdma_hostile, ack_settings_out_of_the_verbs_range_are_refused_at_init) {
  corvid::ibv_config c = test_ibv();
  c.ack_timeout = 32;
  corvid::rpc_client client;
  auto e = client.init_ibv(c);
  EXPECT_EQ(e.code(), corvid::rpc_errc::invalid_argument);
  EXPECT_NE(e.message().find("ibv_config::ack_timeout must be 0..31"), std::string::npos)
      << e.message();
  c.ack_timeout = 14;
  c.retry_count = 8;
  e = client.init_ibv(c);
  EXPECT_NE(e.message().find("ibv_config::retry_count must be 0..7"), std::string::npos)
      << e.message();
}

}  // namespace
}  // namespace corvid_rdma_test
