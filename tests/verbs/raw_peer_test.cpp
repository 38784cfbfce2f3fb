// softverbs against a peer that is a raw socket (this test): frames written byte by byte as
// wire.hpp lays them out, so the test controls what a real queue pair would never send.
// Regression for fuzz/softverbs_fuzz: a parked message's buffer was allocated (and zeroed) at
// the size its header declared, so one 16-byte frame made the receiver commit up to 1 GiB.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>
#include <vector>

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
  const sockaddr_un addr =
      abstract_address(soft::listen_name(fake.gid, fake.qp_num, fake.psn), len);
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

// Writes data frames of `body` (seq, seq + 1, ...) from another thread while the caller
// drives the queue pair: the socket holds less than the frames, so a blocking write on the
// driving thread would wait forever. Errors are ignored: the queue pair may hang up.
class frame_writer {
 public:
  frame_writer(const raw_peer& peer, std::uint32_t seq, int count, const std::vector<char>& body)
      : thread_([&peer, seq, count, &body, this] {
          for (int i = 0; i < count; ++i) {
            wire::frame_header h{};
            h.type = wire::frame_type::data;
            h.seq = seq + static_cast<std::uint32_t>(i);
            h.length = static_cast<std::uint32_t>(body.size());
            if (!send_all(peer.sock, &h, sizeof h) ||
                !send_all(peer.sock, body.data(), body.size()))
              break;
          }
          done_ = true;
        }) {}
  ~frame_writer() { thread_.join(); }
  bool done() const noexcept { return done_; }

 private:
  static bool send_all(int fd, const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      c += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Sets CORVID_SOFTVERBS_MAX_PARKED for the devices opened while it lives.
struct parked_cap_guard {
  explicit parked_cap_guard(const char* value) {
    ::setenv("CORVID_SOFTVERBS_MAX_PARKED", value, 1);
  }
  ~parked_cap_guard() { ::unsetenv("CORVID_SOFTVERBS_MAX_PARKED"); }
};

// Hostile review: a peer that advertises rnr_retry 7 and keeps sending while we post no
// receive made us park every SEND (RSS grew ~300 MB/s to an OOM kill). Past the cap the
// queue pair fails as if the peer's RNR retries ran out, and tells the peer so.
TEST(SoftRawPeer, ParkingPastTheCapFailsTheQueuePairLikeRetriesExhausted) {
  parked_cap_guard cap("1048576");  // 1 MiB
  auto dev = open_soft();
  side s(*dev, {}, 4096);
  raw_peer peer;
  ASSERT_NO_FATAL_FAILURE(connect_raw(s, peer));
  const std::vector<char> body(256 * 1024, 'x');
  {
    // Three 256 KiB SENDs fit under the 1 MiB cap.
    frame_writer w(peer, peer_psn, 3, body);
    drive(
        {&s}, [&] { return w.done() || s.qp->state() == qp_state::error; }, 5s);
    drive(
        {&s}, [] { return false; }, 50ms);
    EXPECT_EQ(s.qp->state(), qp_state::rts) << "three SENDs (768 KiB) are under the cap";
  }
  {
    // A fourth (1 MiB plus bookkeeping) crosses it.
    frame_writer w(peer, peer_psn + 3, 1, body);
    const bool failed = drive(
        {&s}, [&] { return s.qp->state() == qp_state::error; }, 5s);
    ::shutdown(peer.sock, SHUT_WR);  // the writer may wait on a full socket: let it end
    ASSERT_TRUE(failed)
        << "a fourth 256 KiB SEND with no receive posted was parked past the 1 MiB cap";
  }
  // The peer hears why: our hello, then a NAK naming the SEND that crossed the cap.
  struct {
    wire::frame_header h;
    wire::hello hello;
    wire::frame_header nak;
  } in{};
  ASSERT_EQ(::recv(peer.sock, &in, sizeof in, MSG_WAITALL), static_cast<ssize_t>(sizeof in));
  EXPECT_EQ(in.nak.type, wire::frame_type::nak);
  EXPECT_EQ(in.nak.seq, peer_psn + 3);
  EXPECT_EQ(static_cast<wire::nak_kind>(in.nak.arg), wire::nak_kind::rnr_retry_exceeded);
  // A receive posted now is flushed: the queue pair is in error for good.
  ASSERT_FALSE(s.recv(1, s.at(0, 64)));
  s.poll_once();
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.take().status, wc_status::wr_flush_err);
}

// Below the cap parking still works: the parked SENDs are delivered once receives come, and
// the bytes they held count again for later ones.
TEST(SoftRawPeer, ParkedBytesAreGivenBackWhenDelivered) {
  parked_cap_guard cap("1048576");
  auto dev = open_soft();
  side s(*dev, {}, 1 << 20);
  raw_peer peer;
  ASSERT_NO_FATAL_FAILURE(connect_raw(s, peer));
  const std::vector<char> body(256 * 1024, 'y');
  std::uint32_t seq = peer_psn;
  for (int round = 0; round < 4; ++round) {  // 12 x 256 KiB parked in all, 768 KiB at once
    {
      frame_writer w(peer, seq, 3, body);
      ASSERT_TRUE(drive(
          {&s}, [&] { return w.done(); }, 5s));
      drive(
          {&s}, [] { return false; }, 50ms);
    }
    seq += 3;
    EXPECT_TRUE(s.done.empty());
    for (std::uint64_t i = 0; i < 3; ++i) {
      ASSERT_FALSE(s.recv(i, s.at(i * body.size(), body.size())));
    }
    ASSERT_TRUE(drive({&s}, [&] { return s.done.size() == 3; }));
    for (int i = 0; i < 3; ++i) EXPECT_EQ(s.take().status, wc_status::success);
    ASSERT_EQ(s.qp->state(), qp_state::rts);
  }
}

}  // namespace
}  // namespace corvid::verbs::test
