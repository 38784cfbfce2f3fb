// softverbs against a peer that is a raw socket (this test): frames written byte by byte as
// wire.hpp lays them out, so the test controls what a real queue pair would never send.
// Regression for fuzz/softverbs_fuzz: a parked message's buffer was allocated (and zeroed) at
// the size its header declared, so one 16-byte frame made the receiver commit up to 1 GiB.
#include <cstdio>
#include <unistd.h>

#include "soft_pair.hpp"
#include "verbs/soft/context.hpp"
#include "verbs/soft/wire.hpp"
#include <sys/socket.h>
#include <sys/un.h>

namespace corvid::verbs::test {
namespace {

namespace wire = soft::wire;

std::size_t resident_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

sockaddr_un abstract_address(const std::string& name, socklen_t& len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  return addr;
}

// A side whose queue pair is connected (as the active side) to a fake peer: the returned
// socket, after the peer's valid hello (rnr_retry 7: parked messages wait forever).
struct raw_peer {
  int listener = -1;
  int sock = -1;
  ~raw_peer() {
    if (sock >= 0) ::close(sock);
    if (listener >= 0) ::close(listener);
  }
  void write(const void* p, std::size_t n) const {
    ASSERT_EQ(::send(sock, p, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
  }
  void header(wire::frame_type type, std::uint32_t seq, std::uint32_t length) const {
    wire::frame_header h{};
    h.type = type;
    h.seq = seq;
    h.length = length;
    write(&h, sizeof h);
  }
};

constexpr std::uint32_t peer_psn = 0x100;

void connect_raw(side& s, raw_peer& peer) {
  const endpoint_info me = s.qp->local_info();
  endpoint_info fake;
  fake.gid = me.gid;
  fake.qp_num = me.qp_num + 1;  // larger: our queue pair is the active side and calls it
  fake.psn = peer_psn;
  peer.listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len = 0;
  const sockaddr_un addr = abstract_address(soft::listen_name(fake.gid, fake.qp_num), len);
  ASSERT_EQ(::bind(peer.listener, reinterpret_cast<const sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::listen(peer.listener, 1), 0);
  ASSERT_FALSE(s.qp->connect(fake, {}));
  peer.sock = ::accept4(peer.listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(peer.sock, 0);
  wire::hello hello{};
  hello.magic = wire::hello_magic;
  hello.src_qpn = fake.qp_num;
  hello.dst_qpn = me.qp_num;
  hello.psn = peer_psn;
  hello.src_gid = fake.gid;
  hello.dst_gid = me.gid;
  hello.rnr_retry = 7;
  peer.header(wire::frame_type::hello, 0, sizeof hello);
  peer.write(&hello, sizeof hello);
}

TEST(SoftRawPeer, ParkedMessageIsNotAllocatedAtItsDeclaredLength) {
  auto dev = open_soft();
  side s(*dev, {}, 4096);
  raw_peer peer;
  ASSERT_NO_FATAL_FAILURE(connect_raw(s, peer));
  const std::size_t before = resident_bytes();
  // No receive posted: the message is parked. Its header says 1 GiB; 10 bytes follow.
  peer.header(wire::frame_type::data, peer_psn, 1u << 30);
  peer.write("0123456789", 10);
  EXPECT_FALSE(drive(
      {&s}, [&] { return !s.done.empty(); }, 100ms));
  EXPECT_EQ(s.qp->state(), qp_state::rts);
  const std::size_t after = resident_bytes();
  EXPECT_LT(after, before + (256u << 20)) << "parking grew the RSS by " << (after - before);
  // The peer leaves mid-message: the queue pair errors, the receive posted now is flushed.
  ::shutdown(peer.sock, SHUT_WR);
  EXPECT_TRUE(drive(
      {&s}, [&] { return s.qp->state() == qp_state::error; }, 2s));
  ASSERT_FALSE(s.recv(1, s.at(0, 64)));
  s.poll_once();
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.take().status, wc_status::wr_flush_err);
}

// The parked buffer grows as the bytes arrive in pieces; the message is delivered whole.
TEST(SoftRawPeer, ParkedMessageArrivingInPiecesIsDeliveredIntact) {
  auto dev = open_soft();
  side s(*dev, {}, 1 << 18);
  raw_peer peer;
  ASSERT_NO_FATAL_FAILURE(connect_raw(s, peer));
  std::vector<std::uint8_t> payload(150000);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i * 7);
  peer.header(wire::frame_type::data, peer_psn, static_cast<std::uint32_t>(payload.size()));
  for (std::size_t off = 0; off < payload.size(); off += 50000) {
    peer.write(&payload[off], 50000);
    EXPECT_FALSE(drive(
        {&s}, [&] { return !s.done.empty(); }, 5ms));
  }
  ASSERT_FALSE(s.recv(7, s.at(0, payload.size())));
  ASSERT_TRUE(drive({&s}, [&] { return !s.done.empty(); }));
  const work_completion wc = s.take();
  EXPECT_EQ(wc.wr_id, 7u);
  EXPECT_EQ(wc.status, wc_status::success);
  EXPECT_EQ(wc.byte_len, payload.size());
  EXPECT_EQ(std::memcmp(s.buf.data(), payload.data(), payload.size()), 0);
  // After our queue pair's hello, the peer reads the ack for it.
  struct {
    wire::frame_header h;
    wire::hello hello;
    wire::frame_header ack;
  } in{};
  ASSERT_EQ(::recv(peer.sock, &in, sizeof in, MSG_WAITALL), static_cast<ssize_t>(sizeof in));
  EXPECT_EQ(in.h.type, wire::frame_type::hello);
  EXPECT_EQ(in.ack.type, wire::frame_type::ack);
  EXPECT_EQ(in.ack.seq, peer_psn);
}

}  // namespace
}  // namespace corvid::verbs::test
