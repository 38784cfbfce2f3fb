// Fuzzes softverbs' packet handling (src/verbs/soft/qp_io.cpp, qp.cpp): the frames a connected
// queue pair reads from its peer's Unix socket (wire.hpp: hello, data, ack, nak). The peer is
// this harness. Per input it opens a soft device with a CQ and one RC queue pair, posts 0-4
// receives (1 or 2 sges each, sizes from 0 B to 20 KiB, so the staging-buffer and the direct
// readv paths are both reached) and connects the queue pair to a fake peer whose rendezvous
// socket the harness binds (listen_name(gid, qpn, psn)). As the active side the queue pair calls
// the harness; as the passive side the harness calls it. The harness then writes its own
// valid hello (or not: the input then has to carry one), 0-2 sends are posted, the input's
// stream goes to the socket in one or two writes, and the harness shuts down its write side
// (at once, or after driving the queue for 3 ms).
// It drives the CQ the way a reactor does until the queue pair closes the link (the harness
// reads EOF) or 1 s passes, then forces set_error() and polls the flushes.
//
// Input: byte 0 = options, byte 1 = receives, byte 2 = split point (/255), then the stream.
//   bit 0: the queue pair is passive (the harness calls it) instead of active
//   bit 1: the harness writes no hello (the stream is the whole conversation)
//   bits 2-3: sends posted after connecting (0-2; 3 = 2 with immediate data)
//   bit 4: the stream goes out in two writes, polling the CQ in between
//   bits 5-6: the rnr_retry in the harness's hello: 0, 1, 3 or 7 (= forever)
//   bit 7: once the stream is written and polled, one more 64 B receive is posted (it takes a
//          parked message)
// Byte 1: bits 0-2 = receives posted before connecting (0-4, mod 5); bits 3-5 = size class of
//   the receives (0, 16, 100, 4096, 20000, 64 B, 1 B, 300 B); bit 6: 2 sges per receive;
//   bit 7: hold the link open for 3 ms before the shutdown (RNR and connect timers expire).
// Ack and nak frames in the stream carry seqs relative to the queue pair's (random) first psn:
// the harness adds the psn to them while walking the stream's frame headers, so seq 0 acks the
// first send. The harness's own psn is 0x100: data frames start at seq 0x100.
//
// Checked, besides "no crash, no ASan/UBSan/LSan report": the queue pair closes the link within
// 1 s of the harness's EOF (peer loss is noticed at once); after set_error() every posted work
// request has completed exactly once (any status, flushes included) and no completion names an
// unknown wr_id; a successful receive's byte_len fits its buffers; the guard bytes around every
// receive buffer are never written.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <poll.h>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include "verbs/soft/context.hpp"
#include "verbs/soft/wire.hpp"
#include "verbs/verbs.hpp"
#include <sys/socket.h>
#include <sys/un.h>

namespace {

namespace v = corvid::verbs;
namespace wire = corvid::verbs::soft::wire;

constexpr std::uint32_t harness_psn = 0x100;
constexpr std::size_t guard = 64;
constexpr std::uint8_t guard_byte = 0xa5;
constexpr std::array<std::uint32_t, 8> recv_sizes = {0, 16, 100, 4096, 20000, 64, 1, 300};

// SOFTVERBS_FUZZ_TRACE=1: print every completion (to check what a seed reaches).
const bool trace = std::getenv("SOFTVERBS_FUZZ_TRACE") != nullptr;

void die(const char* what) {
  std::fprintf(stderr, "softverbs_fuzz: %s\n", what);
  std::abort();  // libFuzzer records the input and the stack
}
void check(bool ok, const char* what) {
  if (!ok) die(what);
}

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

sockaddr_un abstract_address(const std::string& name, socklen_t& len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  return addr;
}

// The stream with ack/nak seqs shifted by the queue pair's psn (see the top comment).
std::vector<std::uint8_t> relocate(std::span<const std::uint8_t> in, std::uint32_t psn) {
  std::vector<std::uint8_t> out(in.begin(), in.end());
  std::size_t at = 0;
  while (at + sizeof(wire::frame_header) <= out.size()) {
    wire::frame_header h;
    std::memcpy(&h, &out[at], sizeof h);
    if (h.type == wire::frame_type::ack || h.type == wire::frame_type::nak) {
      h.seq += psn;
      std::memcpy(&out[at], &h, sizeof h);
    }
    at += sizeof h;
    if (h.length > out.size() - at) break;
    at += h.length;
  }
  return out;
}

void write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the queue pair closed the link: the rest does not matter
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

struct posted {
  std::size_t offset = 0;  // in the buffer
  std::uint32_t capacity = 0;
  bool is_recv = false;
  int completions = 0;
};

struct run {
  std::unique_ptr<v::device> dev;
  std::unique_ptr<v::protection_domain> pd;
  std::unique_ptr<v::completion_queue> cq;
  std::unique_ptr<v::queue_pair> qp;
  std::vector<std::uint8_t> buf;
  std::unique_ptr<v::memory_region> mr;
  std::map<std::uint64_t, posted> requests;
  std::size_t buf_used = 0;

  ~run() {
    qp.reset();  // children before parents
    mr.reset();
  }

  void post_recv(std::uint32_t size, bool two_sges) {
    const std::uint64_t id = 1000 + requests.size();
    const std::size_t off = buf_used + guard;
    buf_used = off + size;
    std::array<v::sge, 2> sges;
    std::size_t n = 1;
    sges[0] = mr->slice(off, size);
    if (two_sges) {
      sges[0] = mr->slice(off, size / 2);
      sges[1] = mr->slice(off + size / 2, size - size / 2);
      n = 2;
    }
    v::recv_wr wr;
    wr.wr_id = id;
    wr.sg_list = std::span<const v::sge>(sges.data(), n);
    if (qp->post_recv(wr)) die("post_recv failed");
    requests[id] = {off, size, true, 0};
  }

  void post_send(std::uint32_t size, std::optional<std::uint32_t> imm) {
    const std::uint64_t id = 2000 + requests.size();
    const std::size_t off = buf_used + guard;
    buf_used = off + size;
    const v::sge s = mr->slice(off, size);
    v::send_wr wr;
    wr.wr_id = id;
    wr.sg_list = std::span<const v::sge>(&s, 1);
    wr.imm = imm;
    if (qp->post_send(wr)) die("post_send failed");
    requests[id] = {off, size, false, 0};
  }

  void collect() {
    v::work_completion wcs[16];
    for (;;) {
      auto n = cq->poll(wcs);
      check(n.has_value(), "poll failed");
      for (std::size_t i = 0; i < *n; ++i) {
        const v::work_completion& wc = wcs[i];
        if (trace) {
          std::fprintf(stderr, "wc %llu %s byte_len %u\n",
                       static_cast<unsigned long long>(wc.wr_id),
                       std::string(v::to_string(wc.status)).c_str(), wc.byte_len);
        }
        auto it = requests.find(wc.wr_id);
        check(it != requests.end(), "a completion for a wr_id never posted");
        check(++it->second.completions == 1, "a work request completed twice");
        check(wc.qp_num == qp->qp_num(), "a completion names another queue pair");
        if (wc.status == v::wc_status::success) {
          check((wc.opcode == v::wc_opcode::recv) == it->second.is_recv,
                "a completion's opcode does not match its request");
          if (it->second.is_recv) {
            check(wc.byte_len <= it->second.capacity, "received more than the receive's buffers");
          }
        }
      }
      if (*n < std::size(wcs)) return;
    }
  }

  // Drives the queue like a reactor (arm, poll, wait on its fd, consume) for up to `limit`,
  // reading and dropping what the queue pair sends. Returns whether it closed the link.
  bool drive(int sock, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      cq->request_notify();
      collect();
      std::uint8_t sink[4096];
      for (;;) {
        const ssize_t n = ::recv(sock, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
        break;
      }
      pollfd fds[2] = {{cq->event_fd(), POLLIN, 0}, {sock, POLLIN, 0}};
      ::poll(fds, 2, 1);
      cq->consume_events();
    }
    return false;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return -1;
  const std::uint8_t options = data[0];
  const std::uint8_t recv_opts = data[1];
  const bool passive = (options & 1) != 0;
  const bool harness_hello = (options & 2) == 0;
  const unsigned sends = (options >> 2) & 3;
  const bool split = (options & 0x10) != 0;
  constexpr std::uint8_t rnr_codes[4] = {0, 1, 3, 7};
  const std::uint8_t peer_rnr_retry = rnr_codes[(options >> 5) & 3];
  const bool late_recv = (options & 0x80) != 0;
  const unsigned recvs = (recv_opts & 7) % 5;
  const std::uint32_t recv_size = recv_sizes[(recv_opts >> 3) & 7];
  const bool two_sges = (recv_opts & 0x40) != 0;
  const bool hold = (recv_opts & 0x80) != 0;

  run r;
  v::device_options dopts;
  dopts.provider = "soft";
  auto dev = v::open_device(dopts);
  check(dev.has_value(), "open_device(soft) failed");
  r.dev = std::move(*dev);
  r.pd = std::move(*r.dev->alloc_pd());
  r.cq = std::move(*r.dev->create_cq(64));
  v::qp_caps caps;
  caps.max_send_wr = 4;
  caps.max_recv_wr = 8;
  caps.max_recv_sge = 2;
  auto qp = r.pd->create_qp({r.cq.get(), r.cq.get(), caps});
  check(qp.has_value(), "create_qp failed");
  r.qp = std::move(*qp);
  r.buf.assign(8 * (20000 + guard) + 2 * (64 + guard) + guard, guard_byte);
  r.mr = std::move(*r.pd->reg_mr(r.buf.data(), r.buf.size(), v::access_local_write));
  for (unsigned i = 0; i < recvs; ++i) r.post_recv(recv_size, two_sges);

  // The fake peer: same gid, a neighbouring qp number, so its rendezvous name is unique to
  // this device and the order (who calls whom) is chosen by the number alone.
  const v::endpoint_info me = r.qp->local_info();
  v::endpoint_info peer;
  peer.gid = me.gid;
  peer.qp_num = passive ? me.qp_num - 1 : me.qp_num + 1;
  peer.psn = harness_psn;
  fd_guard listener{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  socklen_t len = 0;
  const sockaddr_un peer_addr =
      abstract_address(corvid::verbs::soft::listen_name(peer.gid, peer.qp_num, peer.psn), len);
  check(listener.fd >= 0 &&
            ::bind(listener.fd, reinterpret_cast<const sockaddr*>(&peer_addr), len) == 0 &&
            ::listen(listener.fd, 4) == 0,
        "cannot bind the fake peer's rendezvous socket");

  v::connect_options copts;
  copts.rnr_retry = 7;
  copts.min_rnr_timer = 12;  // 0.64 ms per RNR retry: parked messages time out in a hold
  copts.retry_cnt = 1;
  copts.timeout = 8;  // ~1 ms per try: a peer that never says hello fails sends within ~2 ms
  check(!r.qp->connect(peer, copts), "connect to the fake peer failed");

  fd_guard sock;
  if (passive) {
    sock.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un qp_addr =
        abstract_address(corvid::verbs::soft::listen_name(me.gid, me.qp_num, me.psn), len);
    check(sock.fd >= 0 && ::connect(sock.fd, reinterpret_cast<const sockaddr*>(&qp_addr), len) == 0,
          "cannot call the queue pair's rendezvous socket");
  } else {
    sock.fd = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
    check(sock.fd >= 0, "the active queue pair did not call the fake peer");
  }
  if (harness_hello) {
    wire::frame_header h{};
    h.type = wire::frame_type::hello;
    h.length = sizeof(wire::hello);
    wire::hello hello{};
    hello.magic = wire::hello_magic;
    hello.src_qpn = peer.qp_num;
    hello.dst_qpn = me.qp_num;
    hello.psn = harness_psn;
    hello.src_gid = peer.gid;
    hello.dst_gid = me.gid;
    hello.rnr_retry = peer_rnr_retry;
    std::uint8_t msg[sizeof h + sizeof hello];
    std::memcpy(msg, &h, sizeof h);
    std::memcpy(msg + sizeof h, &hello, sizeof hello);
    write_all(sock.fd, msg, sizeof msg);
  }
  for (unsigned i = 0; i < std::min(sends, 2u); ++i) {
    r.post_send(i == 0 ? 24 : 64, sends == 3 ? std::optional<std::uint32_t>(7 + i) : std::nullopt);
  }

  const std::vector<std::uint8_t> stream = relocate({data + 3, size - 3}, me.psn);
  const std::size_t cut = split ? stream.size() * data[2] / 255 : stream.size();
  write_all(sock.fd, stream.data(), cut);
  if (split) {
    r.cq->request_notify();
    r.collect();
    write_all(sock.fd, stream.data() + cut, stream.size() - cut);
  }
  if (late_recv) {
    r.cq->request_notify();
    r.collect();  // what arrived is placed or parked before the receive comes
    r.post_recv(64, false);
  }
  if (hold) r.drive(sock.fd, std::chrono::milliseconds(3));  // RNR and connect timers fire
  ::shutdown(sock.fd, SHUT_WR);

  // Drive the queue like a reactor until the queue pair closes the link (EOF here).
  const bool eof = r.drive(sock.fd, std::chrono::seconds(1));
  check(eof, "the queue pair kept the link open 1 s after the peer's EOF");
  if (trace)
    std::fprintf(stderr, "link closed: %d, state error: %d\n", eof,
                 r.qp->state() == v::qp_state::error);
  // A passive queue pair that rejected the caller keeps waiting for its real peer; end it.
  r.qp->set_error();
  check(r.qp->state() == v::qp_state::error, "set_error did not move the queue pair to ERROR");
  r.collect();
  for (const auto& [id, p] : r.requests) {
    check(p.completions == 1, "a posted work request never completed");
  }
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin, end) of every buffer
  for (const auto& [id, p] : r.requests) spans.emplace_back(p.offset, p.offset + p.capacity);
  std::sort(spans.begin(), spans.end());
  std::size_t from = 0;
  spans.emplace_back(r.buf.size(), r.buf.size());
  for (const auto& [begin, end] : spans) {
    for (std::size_t i = from; i < begin; ++i) {
      if (r.buf[i] != guard_byte) die("a byte outside every receive buffer was written");
    }
    from = std::max(from, end);
  }
  return 0;
}
