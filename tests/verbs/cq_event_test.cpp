// The completion queue's fd: readable after request_notify() once a completion arrives,
// quiet again after consume_events(); usable from an asio reactor without busy polling.
#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>

#include "soft_pair.hpp"

namespace corvid::verbs::test {
namespace {

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

TEST(SoftCqEvents, FdBecomesReadableAfterNotify) {
  auto dev = open_soft();
  side x(*dev), y(*dev);
  // Only b's queue is driven until the SEND arrives: a must be the active side (the
  // smaller qp_num, random since issue 12), whose SEND leaves without a's queue polled.
  side& a = x.qp->qp_num() < y.qp->qp_num() ? x : y;
  side& b = &a == &x ? y : x;
  connect_pair(a, b);
  ASSERT_FALSE(b.recv(1, b.at(0, 64)));
  ASSERT_FALSE(b.cq->request_notify());
  b.poll_once();
  EXPECT_TRUE(b.done.empty());
  b.cq->consume_events();
  EXPECT_FALSE(readable(b.cq->event_fd(), 0));  // nothing happened yet

  ASSERT_FALSE(a.send(1, a.at(0, 10)));
  ASSERT_TRUE(readable(b.cq->event_fd(), 5000));
  b.cq->consume_events();
  b.poll_once();
  ASSERT_EQ(b.done.size(), 1u);
  EXPECT_EQ(b.take().opcode, wc_opcode::recv);
  EXPECT_FALSE(readable(b.cq->event_fd(), 0));  // consumed: quiet until the next one

  // The sender's queue wakes for the ack the same way.
  ASSERT_FALSE(a.cq->request_notify());
  ASSERT_TRUE(readable(a.cq->event_fd(), 5000));
  a.cq->consume_events();
  a.poll_once();
  ASSERT_EQ(a.done.size(), 1u);
  EXPECT_EQ(a.take().opcode, wc_opcode::send);
  EXPECT_FALSE(readable(a.cq->event_fd(), 0));
}

// Without request_notify a completion is still polled, but raises no event.
TEST(SoftCqEvents, NoEventWithoutNotify) {
  auto dev = open_soft();
  side x(*dev), y(*dev);
  // Only b's queue is driven until the SEND arrives: a must be the active side (the
  // smaller qp_num, random since issue 12), whose SEND leaves without a's queue polled.
  side& a = x.qp->qp_num() < y.qp->qp_num() ? x : y;
  side& b = &a == &x ? y : x;
  connect_pair(a, b);
  ASSERT_FALSE(b.recv(1, b.at(0, 64)));
  ASSERT_FALSE(a.send(1, a.at(0, 10)));
  ASSERT_TRUE(readable(b.cq->event_fd(), 5000));  // provider work pending (the data)
  b.cq->consume_events();                         // does the work; not armed: no event
  EXPECT_FALSE(readable(b.cq->event_fd(), 0));
  b.poll_once();
  EXPECT_EQ(b.done.size(), 1u);
}

// The pattern a transport uses on its reactor: arm, drain, async_wait, consume, repeat.
TEST(SoftCqEvents, DrivesAnAsioReactor) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  constexpr int total = 200;
  for (int i = 0; i < 16; ++i) ASSERT_FALSE(b.recv(i, b.at(i * 64, 64)));

  asio::io_context io;
  asio::posix::stream_descriptor fd_a(io, a.cq->event_fd()), fd_b(io, b.cq->event_fd());
  int received = 0, acked = 0, sent = 0, wakeups = 0;
  std::function<void(side&, asio::posix::stream_descriptor&)> arm;
  auto handle = [&](side& s) {
    while (!s.done.empty()) {
      const work_completion wc = s.take();
      EXPECT_EQ(wc.status, wc_status::success);
      if (wc.opcode == wc_opcode::recv) {
        ++received;
        EXPECT_FALSE(b.recv(wc.wr_id, b.at(wc.wr_id * 64, 64)));
      } else {
        ++acked;
      }
    }
    while (sent < total && sent - acked < 8) EXPECT_FALSE(a.send(sent++, a.at(0, 32)));
  };
  arm = [&](side& s, asio::posix::stream_descriptor& fd) {
    for (;;) {
      s.cq->request_notify();
      s.poll_once();
      if (s.done.empty()) break;
      handle(s);
    }
    if (received == total && acked == total) return;
    fd.async_wait(asio::posix::descriptor_base::wait_read, [&](std::error_code ec) {
      if (ec) return;
      ++wakeups;
      s.cq->consume_events();
      arm(s, fd);
    });
  };
  handle(a);
  arm(a, fd_a);
  arm(b, fd_b);
  asio::steady_timer guard(io, 20s);
  guard.async_wait([&](std::error_code ec) {
    if (!ec) io.stop();
  });
  // run until both sides stopped re-arming; then cancel the guard
  while (!(received == total && acked == total) && !io.stopped()) io.run_one();
  guard.cancel();
  fd_a.release();  // the queues own their fds
  fd_b.release();
  EXPECT_EQ(received, total);
  EXPECT_EQ(acked, total);
  EXPECT_GT(wakeups, 0);
}

}  // namespace
}  // namespace corvid::verbs::test
