// Registered memory: every sge is checked against its region, on both sides.
#include "soft_pair.hpp"

namespace corvid::verbs::test {
namespace {

TEST(SoftMemory, RegisterGivesKeysAndBounds) {
  auto dev = open_soft();
  auto pd = std::move(*dev->alloc_pd());
  std::vector<std::byte> a(4096), b(4096);
  auto ra = std::move(*pd->reg_mr(a.data(), a.size(), access_local_write));
  auto rb = std::move(*pd->reg_mr(b.data(), b.size(), 0));
  EXPECT_NE(ra->lkey(), rb->lkey());
  EXPECT_EQ(ra->addr(), a.data());
  EXPECT_EQ(ra->length(), 4096u);
  EXPECT_FALSE(pd->reg_mr(nullptr, 10, 0));
  EXPECT_FALSE(pd->reg_mr(a.data(), 0, 0));
}

// A send whose sge runs past its region: accepted, completes with loc_prot_err, and the
// queue pair errors (later requests flush) — as on hardware.
TEST(SoftMemory, SendOutOfRegionIsProtectionError) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  ASSERT_FALSE(b.recv(1, b.at(0, 4096)));
  const sge past = sge::of(a.buf.data() + a.buf.size() - 10, 20, a.mr->lkey());
  ASSERT_FALSE(a.send(7, past));
  ASSERT_TRUE(drive({&a, &b}, [&] { return !a.done.empty(); }));
  const work_completion wc = a.take();
  EXPECT_EQ(wc.wr_id, 7u);
  EXPECT_EQ(wc.status, wc_status::loc_prot_err);
  EXPECT_EQ(a.qp->state(), qp_state::error);
  ASSERT_FALSE(a.send(8, a.at(0, 10)));
  ASSERT_TRUE(drive({&a}, [&] { return !a.done.empty(); }));
  EXPECT_EQ(a.take().status, wc_status::wr_flush_err);
}

TEST(SoftMemory, UnknownLkeyIsProtectionError) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  ASSERT_FALSE(a.send(1, sge::of(a.buf.data(), 10, a.mr->lkey() + 12345)));
  ASSERT_TRUE(drive({&a}, [&] { return !a.done.empty(); }));
  EXPECT_EQ(a.take().status, wc_status::loc_prot_err);
}

TEST(SoftMemory, DeregisteredRegionIsProtectionError) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  const std::uint32_t stale = a.mr->lkey();
  a.mr.reset();
  ASSERT_FALSE(a.send(1, sge::of(a.buf.data(), 10, stale)));
  ASSERT_TRUE(drive({&a}, [&] { return !a.done.empty(); }));
  EXPECT_EQ(a.take().status, wc_status::loc_prot_err);
}

// Receive buffers need local write access; the sender learns its message was refused.
TEST(SoftMemory, ReceiveIntoReadOnlyRegionFails) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  std::vector<std::byte> ro(64);
  auto ro_mr = std::move(*b.pd->reg_mr(ro.data(), ro.size(), 0));
  ASSERT_FALSE(b.recv(1, ro_mr->slice(0, 64)));
  a.fill(0, "hello");
  ASSERT_FALSE(a.send(2, a.at(0, 5)));
  ASSERT_TRUE(drive({&a, &b}, [&] { return !a.done.empty() && !b.done.empty(); }));
  EXPECT_EQ(b.take().status, wc_status::loc_prot_err);
  EXPECT_EQ(a.take().status, wc_status::rem_op_err);
  EXPECT_EQ(b.qp->state(), qp_state::error);
  EXPECT_EQ(a.qp->state(), qp_state::error);
}

}  // namespace
}  // namespace corvid::verbs::test
