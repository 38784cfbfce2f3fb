// Failures: receive too small, peer queue pair destroyed, bad remote info, a peer that never
// connects. Every outstanding request ends with an error completion; nothing hangs.
#include <map>

#include "soft_pair.hpp"

namespace corvid::verbs::test {
namespace {

// A message larger than the oldest receive: loc_len_err there, rem_inv_req_err at the sender,
// both queue pairs in error (RC semantics).
TEST(SoftFailure, ReceiveTooSmallIsLengthError) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  ASSERT_FALSE(b.recv(1, b.at(0, 16)));
  ASSERT_FALSE(b.recv(2, b.at(16, 4096)));
  ASSERT_FALSE(a.send(1, a.at(0, 100)));
  ASSERT_FALSE(a.send(2, a.at(0, 10)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return a.done.size() == 2 && b.done.size() == 2; }));
  const work_completion r1 = b.take();
  EXPECT_EQ(r1.wr_id, 1u);
  EXPECT_EQ(r1.status, wc_status::loc_len_err);
  EXPECT_EQ(b.take().status, wc_status::wr_flush_err);
  EXPECT_EQ(a.take().status, wc_status::rem_inv_req_err);
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
  EXPECT_EQ(a.qp->state(), qp_state::error);
  EXPECT_EQ(b.qp->state(), qp_state::error);
}

// Messages already acknowledged stay successful when a later one fails.
TEST(SoftFailure, EarlierSendsSucceedBeforeTheFailingOne) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  ASSERT_FALSE(b.recv(1, b.at(0, 64)));
  ASSERT_FALSE(b.recv(2, b.at(64, 8)));
  ASSERT_FALSE(a.send(1, a.at(0, 64)));
  ASSERT_FALSE(a.send(2, a.at(0, 64)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return a.done.size() == 2; }));
  EXPECT_EQ(a.take().status, wc_status::success);
  EXPECT_EQ(a.take().status, wc_status::rem_inv_req_err);
}

// The peer queue pair is destroyed: our receives flush, the send in flight fails.
TEST(SoftFailure, PeerDestroyedFlushesEverything) {
  auto dev = open_soft();
  side a(*dev);
  auto b = std::make_unique<side>(*dev);
  connect_pair(a, *b);
  ASSERT_FALSE(a.recv(1, a.at(0, 64)));
  ASSERT_FALSE(a.recv(2, a.at(64, 64)));
  // Make sure the link is up (hello exchanged) before the peer vanishes.
  ASSERT_FALSE(b->recv(1, b->at(0, 64)));
  ASSERT_FALSE(a.send(9, a.at(0, 8)));
  ASSERT_TRUE(drive({&a, b.get()}, [&] { return a.done.size() == 1; }));
  a.take();
  b.reset();
  ASSERT_FALSE(a.send(10, a.at(0, 8)));
  ASSERT_FALSE(a.send(11, a.at(0, 8)));
  ASSERT_TRUE(drive({&a}, [&] { return a.done.size() == 4; }));
  std::map<std::uint64_t, wc_status> by_id;
  while (!a.done.empty()) {
    const work_completion wc = a.take();
    by_id[wc.wr_id + (wc.opcode == wc_opcode::recv ? 100 : 0)] = wc.status;
  }
  EXPECT_EQ(by_id[101], wc_status::wr_flush_err);
  EXPECT_EQ(by_id[102], wc_status::wr_flush_err);
  EXPECT_NE(by_id[10], wc_status::success);
  EXPECT_EQ(by_id[11], wc_status::wr_flush_err);
  EXPECT_EQ(a.qp->state(), qp_state::error);
}

TEST(SoftFailure, ConnectToMissingQueuePairFails) {
  auto dev = open_soft();
  side a(*dev);
  endpoint_info bogus = a.qp->local_info();
  bogus.qp_num ^= 0x5a5a5;
  const rpc_error e = a.qp->connect(bogus, {});
  EXPECT_EQ(e, rpc_errc::connect_failed);
  EXPECT_NE(e.message().find("no queue pair"), std::string::npos) << e.message();
}

TEST(SoftFailure, ConnectToNonSoftAddressFails) {
  auto dev = open_soft();
  side a(*dev);
  endpoint_info ib{};
  ib.qp_num = 77;
  ib.gid = {0xfe, 0x80};
  EXPECT_EQ(a.qp->connect(ib, {}), rpc_errc::connect_failed);
  EXPECT_EQ(a.qp->connect(a.qp->local_info(), {}), rpc_errc::invalid_argument);  // itself
}

TEST(SoftFailure, ConnectTwiceIsRefused) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  EXPECT_EQ(a.qp->connect(b.qp->local_info(), {}), rpc_errc::invalid_argument);
}

TEST(SoftFailure, BadConnectOptionsAreRefused) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  EXPECT_EQ(a.qp->connect(b.qp->local_info(), rnr(8)), rpc_errc::invalid_argument);
}

// The peer exists but never connects its side: our send gives up after the transport
// retries (retry_cnt + 1 times 4.096 us x 2^timeout) instead of hanging.
TEST(SoftFailure, PeerThatNeverConnectsTimesOut) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_options o;
  o.retry_cnt = 2;
  o.timeout = 12;  // 3 x 16.8 ms
  ASSERT_FALSE(a.qp->connect(b.qp->local_info(), o));
  ASSERT_FALSE(a.send(1, a.at(0, 8)));
  ASSERT_FALSE(a.send(2, a.at(0, 8)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return a.done.size() == 2; }));
  EXPECT_EQ(a.take().status, wc_status::retry_exc_err);
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
}

// The peer did connect but does not poll (a busy reactor): unlike a peer that never
// connects, it is waited for — a NIC would be acknowledging on its behalf.
TEST(SoftFailure, ConnectedButSlowPeerIsWaitedFor) {
  auto dev = open_soft();
  side x(*dev), y(*dev);
  // a must be the active side, the smaller qp number (random since issue 12).
  side& a = x.qp->qp_num() < y.qp->qp_num() ? x : y;
  side& b = &a == &x ? y : x;
  connect_options quick;  // a calls b (smaller qp number); 1 try of 4 ms
  quick.retry_cnt = 0;
  quick.timeout = 10;
  ASSERT_FALSE(a.qp->connect(b.qp->local_info(), quick));
  ASSERT_FALSE(b.qp->connect(a.qp->local_info(), {}));
  ASSERT_FALSE(b.recv(1, b.at(0, 64)));
  ASSERT_FALSE(a.send(1, a.at(0, 8)));
  EXPECT_FALSE(drive(
      {&a}, [&] { return !a.done.empty(); }, 100ms));  // b never polls
  ASSERT_TRUE(drive({&a, &b}, [&] { return !a.done.empty(); }));
  EXPECT_EQ(a.take().status, wc_status::success);
}

// set_error flushes everything outstanding.
TEST(SoftFailure, SetErrorFlushes) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  ASSERT_FALSE(a.recv(1, a.at(0, 8)));
  a.qp->set_error();
  EXPECT_EQ(a.qp->state(), qp_state::error);
  ASSERT_TRUE(drive({&a}, [&] { return a.done.size() == 1; }));
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
  ASSERT_TRUE(drive({&b}, [&] { return b.qp->state() == qp_state::error; }));
}

// A third queue pair that calls with the wrong identity is hung up on; the real peer is not
// disturbed.
TEST(SoftFailure, StrayCallerIsRejected) {
  auto dev = open_soft();
  side c(*dev);  // created first: the lowest qp number, so it calls (is the active side)
  side a(*dev), b(*dev);
  // Pick the passive (listening) side of a/b and make c call it, pretending to be a peer.
  side& passive = a.qp->local_info().qp_num > b.qp->local_info().qp_num ? a : b;
  side& active = &passive == &a ? b : a;
  ASSERT_FALSE(passive.qp->connect(active.qp->local_info(), {}));
  if (c.qp->qp_num() < passive.qp->qp_num()) {
    ASSERT_FALSE(c.qp->connect(passive.qp->local_info(), {}));
    ASSERT_FALSE(c.send(1, c.at(0, 8)));
    ASSERT_TRUE(drive({&passive, &c}, [&] { return !c.done.empty(); }));
    EXPECT_NE(c.take().status, wc_status::success);
  }
  ASSERT_FALSE(active.qp->connect(passive.qp->local_info(), {}));
  ASSERT_FALSE(passive.recv(1, passive.at(0, 8)));
  ASSERT_FALSE(active.send(1, active.at(0, 8)));
  ASSERT_TRUE(drive({&passive, &active}, [&] { return !active.done.empty(); }));
  EXPECT_EQ(active.take().status, wc_status::success);
}

}  // namespace
}  // namespace corvid::verbs::test
