#pragma once
// Test scaffolding: softverbs queue pairs with registered buffers, connected in-process, and
// a driver that waits on their completion queues' fds the way a reactor would.
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <poll.h>
#include <vector>

#include <gtest/gtest.h>

#include "verbs/verbs.hpp"

namespace corvid::verbs::test {

using namespace std::chrono_literals;

inline device_options soft_options() {
  device_options o;
  o.provider = "soft";
  return o;
}

inline std::unique_ptr<device> open_soft() {
  auto dev = open_device(soft_options());
  EXPECT_TRUE(dev) << dev.error().message();
  return std::move(*dev);
}

// One side: a completion queue (send and receive), a queue pair, and a registered buffer.
struct side {
  std::unique_ptr<protection_domain> pd;
  std::unique_ptr<completion_queue> cq;
  std::unique_ptr<queue_pair> qp;
  std::vector<std::byte> buf;
  std::unique_ptr<memory_region> mr;
  std::deque<work_completion> done;  // completions collected so far

  side(device& dev, qp_caps caps = {}, std::size_t buf_size = 1 << 20) : buf(buf_size) {
    pd = std::move(*dev.alloc_pd());
    cq = std::move(*dev.create_cq(4096));
    auto q = pd->create_qp({cq.get(), cq.get(), caps});
    EXPECT_TRUE(q) << q.error().message();
    qp = std::move(*q);
    mr = std::move(*pd->reg_mr(buf.data(), buf.size(), access_local_write));
  }
  ~side() {
    qp.reset();  // before its queue and domain
    mr.reset();
  }

  sge at(std::size_t off, std::size_t n) const { return mr->slice(off, n); }
  rpc_error send(std::uint64_t id, std::span<const sge> sges, bool signaled = true,
                 std::optional<std::uint32_t> imm = std::nullopt, bool inline_data = false) {
    send_wr wr;
    wr.wr_id = id;
    wr.sg_list = sges;
    wr.signaled = signaled;
    wr.inline_data = inline_data;
    wr.imm = imm;
    return qp->post_send(wr);
  }
  rpc_error send(std::uint64_t id, sge s) { return send(id, std::span<const sge>(&s, 1)); }
  rpc_error recv(std::uint64_t id, std::span<const sge> sges) {
    recv_wr wr;
    wr.wr_id = id;
    wr.sg_list = sges;
    return qp->post_recv(wr);
  }
  rpc_error recv(std::uint64_t id, sge s) { return recv(id, std::span<const sge>(&s, 1)); }
  void fill(std::size_t off, std::string_view text) {
    std::memcpy(&buf[off], text.data(), text.size());
  }
  std::string text(std::size_t off, std::size_t n) const {
    return std::string(reinterpret_cast<const char*>(&buf[off]), n);
  }
  // Collects what the queue has now.
  void poll_once() {
    work_completion wcs[64];
    auto n = cq->poll(wcs);
    ASSERT_TRUE(n);
    done.insert(done.end(), wcs, wcs + *n);
  }
  work_completion take() {
    EXPECT_FALSE(done.empty());
    if (done.empty()) return {};
    work_completion wc = done.front();
    done.pop_front();
    return wc;
  }
};

inline qp_caps caps_with(std::uint32_t send_wr, std::uint32_t recv_wr, std::uint32_t send_sge = 1,
                         std::uint32_t recv_sge = 1, std::uint32_t max_inline = 0) {
  return {send_wr, recv_wr, send_sge, recv_sge, max_inline};
}

inline connect_options rnr(std::uint8_t retry, std::uint8_t timer = 12) {
  connect_options o;
  o.rnr_retry = retry;
  o.min_rnr_timer = timer;
  return o;
}

inline void connect_pair(side& a, side& b, connect_options ao = {}, connect_options bo = {}) {
  ASSERT_FALSE(a.qp->connect(b.qp->local_info(), ao));
  ASSERT_FALSE(b.qp->connect(a.qp->local_info(), bo));
}

// Drives every side's queue the way an event loop does (arm, poll, wait on the fds, consume)
// until `until()` holds or the timeout passes. Returns whether it holds.
template <class Pred>
bool drive(std::initializer_list<side*> sides, Pred until,
           std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (side* s : sides) {
      s->cq->request_notify();
      s->poll_once();
    }
    if (until()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::vector<pollfd> fds;
    for (side* s : sides) fds.push_back({s->cq->event_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 20);
    for (side* s : sides) s->cq->consume_events();
  }
}

}  // namespace corvid::verbs::test
