// Receiver not ready: with no receive posted the sender retries (rnr_retry times, waiting the
// receiver's min_rnr_timer between tries, 7 = forever), then fails and the queue pair errors.
#include <thread>

#include "soft_pair.hpp"

namespace corvid::verbs::test {
namespace {

// Default policy (retry forever): a receiver that posts late still gets everything, in order.
TEST(SoftRnr, LateReceiveSucceedsWithDefaultRetries) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  a.fill(0, "first");
  a.fill(8, "second");
  ASSERT_FALSE(a.send(1, a.at(0, 5)));
  ASSERT_FALSE(a.send(2, a.at(8, 6)));
  // Nothing posted: the receiver has the data waiting but completes nothing.
  EXPECT_FALSE(drive(
      {&a, &b}, [&] { return !a.done.empty() || !b.done.empty(); }, 150ms));
  EXPECT_EQ(a.qp->state(), qp_state::rts);
  // Both SENDs met an empty receive queue: two RNR NAKs on hardware, counted by the receiver
  // (and its device), never by the sender.
  EXPECT_EQ(b.qp->rnr_naks(), std::optional<std::uint64_t>(2));
  EXPECT_EQ(a.qp->rnr_naks(), std::optional<std::uint64_t>(0));
  EXPECT_EQ(dev->rnr_naks(), std::optional<std::uint64_t>(2));
  ASSERT_FALSE(b.recv(10, b.at(0, 64)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return a.done.size() == 1 && b.done.size() == 1; }));
  EXPECT_EQ(b.take().wr_id, 10u);
  EXPECT_EQ(b.text(0, 5), "first");
  EXPECT_EQ(a.take().wr_id, 1u);
  ASSERT_FALSE(b.recv(11, b.at(64, 64)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return a.done.size() == 1 && b.done.size() == 1; }));
  EXPECT_EQ(b.text(64, 6), "second");
  EXPECT_EQ(a.take().status, wc_status::success);
}

// A receiver on another thread posts its receive only after a while.
TEST(SoftRnr, ReceiverOnAnotherThreadPostsLate) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  std::thread receiver([&] {
    std::this_thread::sleep_for(100ms);  // about time: the send meets no receive for a while
    EXPECT_FALSE(b.recv(1, b.at(0, 4096)));
    EXPECT_TRUE(drive({&b}, [&] { return !b.done.empty(); }));
  });
  ASSERT_FALSE(a.send(1, a.at(0, 3000)));
  EXPECT_TRUE(drive({&a}, [&] { return !a.done.empty(); }));
  receiver.join();
  EXPECT_EQ(a.take().status, wc_status::success);
  EXPECT_EQ(b.take().byte_len, 3000u);
}

// rnr_retry = 0: the first RNR fails the send, the queue pair errors, the rest is flushed.
TEST(SoftRnr, NoRetriesFailsAtOnce) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b, rnr(0));
  ASSERT_FALSE(a.send(1, a.at(0, 8)));
  ASSERT_FALSE(a.send(2, a.at(0, 8)));
  ASSERT_FALSE(a.send(3, a.at(0, 8)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return a.done.size() == 3; }));
  EXPECT_EQ(a.take().status, wc_status::rnr_retry_exc_err);
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
  EXPECT_EQ(a.qp->state(), qp_state::error);
  // Later requests flush too.
  ASSERT_FALSE(a.recv(4, a.at(0, 8)));
  ASSERT_FALSE(a.send(5, a.at(0, 8)));
  ASSERT_TRUE(drive({&a}, [&] { return a.done.size() == 2; }));
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
  // The receiver's connection is gone with it: its receives flush.
  ASSERT_TRUE(drive({&b}, [&] { return b.qp->state() == qp_state::error; }));
  ASSERT_FALSE(b.recv(1, b.at(0, 8)));
  ASSERT_TRUE(drive({&b}, [&] { return !b.done.empty(); }));
  EXPECT_EQ(b.take().status, wc_status::wr_flush_err);
}

// The receiver NAKs and hangs up; the sender writes its next SEND into the closed link before
// it reads anything (EPIPE). The NAK, still unread in its socket, is the reason it reports:
// RNR retries exhausted, not "the peer did not answer".
TEST(SoftRnr, NakWinsOverTheHangUpThatFollowsIt) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b, rnr(0));
  ASSERT_FALSE(b.recv(1, b.at(0, 8)));
  ASSERT_FALSE(a.send(1, a.at(0, 8)));  // the link is up once this one is through
  ASSERT_TRUE(drive({&a, &b}, [&] { return a.done.size() == 1 && b.done.size() == 1; }));
  EXPECT_EQ(a.take().status, wc_status::success);
  ASSERT_FALSE(a.send(2, a.at(0, 8)));  // no receive posted: NAKed
  ASSERT_TRUE(drive({&b}, [&] { return b.qp->state() == qp_state::error; }));
  EXPECT_EQ(b.qp->rnr_naks(), std::optional<std::uint64_t>(1));
  ASSERT_FALSE(a.send(3, a.at(0, 8)));
  ASSERT_TRUE(drive({&a}, [&] { return a.done.size() == 2; }));
  const work_completion first = a.take();
  EXPECT_EQ(first.wr_id, 2u);
  EXPECT_EQ(first.status, wc_status::rnr_retry_exc_err) << to_string(first.status);
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
  EXPECT_EQ(a.qp->state(), qp_state::error);
}

// Finite retries: 3 tries of the receiver's 10.24 ms timer, then rnr_retry_exc_err.
TEST(SoftRnr, FiniteRetriesRunOut) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b, rnr(3), rnr(7, 20));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_FALSE(a.send(1, a.at(0, 8)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return !a.done.empty(); }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_EQ(a.take().status, wc_status::rnr_retry_exc_err);
}

// A receive posted within the retry budget rescues the send.
TEST(SoftRnr, ReceiveWithinBudgetRescuesTheSend) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b, rnr(6), rnr(7, 31));  // 6 x 492 ms
  ASSERT_FALSE(a.send(1, a.at(0, 8)));
  EXPECT_FALSE(drive(
      {&a, &b}, [&] { return !a.done.empty(); }, 50ms));
  ASSERT_FALSE(b.recv(1, b.at(0, 8)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return !a.done.empty(); }));
  EXPECT_EQ(a.take().status, wc_status::success);
}

}  // namespace
}  // namespace corvid::verbs::test
