// SEND/RECV semantics: gather/scatter, inline sends, ordering, immediates, queue limits.
#include <thread>

#include "soft_pair.hpp"

namespace corvid::verbs::test {
namespace {

TEST(SoftSendRecv, GatherAndScatter) {
  auto dev = open_soft();
  side a(*dev, caps_with(16, 16, 3)), b(*dev, caps_with(16, 16, 1, 2));
  connect_pair(a, b);
  b.fill(0, std::string(64, '.'));
  // Receive: 4 bytes at 0, then the rest at 32.
  const sge rs[2] = {b.at(0, 4), b.at(32, 20)};
  ASSERT_FALSE(b.recv(9, rs));
  a.fill(100, "hel");
  a.fill(200, "lo, w");
  a.fill(300, "orld");
  const sge ss[3] = {a.at(100, 3), a.at(200, 5), a.at(300, 4)};
  ASSERT_FALSE(a.send(1, ss));
  ASSERT_TRUE(drive({&a, &b}, [&] { return !a.done.empty() && !b.done.empty(); }));
  const work_completion r = b.take();
  EXPECT_EQ(r.status, wc_status::success);
  EXPECT_EQ(r.opcode, wc_opcode::recv);
  EXPECT_EQ(r.wr_id, 9u);
  EXPECT_EQ(r.byte_len, 12u);
  EXPECT_EQ(r.qp_num, b.qp->qp_num());
  EXPECT_EQ(b.text(0, 4), "hell");
  EXPECT_EQ(b.text(32, 8), "o, world");
  EXPECT_EQ(b.text(40, 4), "....");  // nothing past the message
  const work_completion s = a.take();
  EXPECT_EQ(s.status, wc_status::success);
  EXPECT_EQ(s.opcode, wc_opcode::send);
  EXPECT_EQ(s.wr_id, 1u);
}

TEST(SoftSendRecv, TooManySgesIsRefused) {
  auto dev = open_soft();
  side a(*dev, caps_with(16, 16, 1)), b(*dev);
  connect_pair(a, b);
  const sge ss[2] = {a.at(0, 1), a.at(1, 1)};
  EXPECT_EQ(a.send(1, ss), rpc_errc::invalid_argument);
  EXPECT_EQ(b.recv(1, ss), rpc_errc::invalid_argument);
}

// Inline: the bytes are copied at post time, no lkey is needed, the buffer is free at once.
TEST(SoftSendRecv, InlineSendReusesBufferImmediately) {
  auto dev = open_soft();
  const std::uint32_t max_inline = dev->attr().max_inline_data;
  side a(*dev, caps_with(16, 16, 1, 1, max_inline)), b(*dev);
  connect_pair(a, b);
  EXPECT_EQ(a.qp->caps().max_inline_data, max_inline);
  ASSERT_FALSE(b.recv(1, b.at(0, 4096)));
  ASSERT_FALSE(b.recv(2, b.at(4096, 4096)));
  std::string scratch(max_inline, 'x');  // not registered anywhere
  const sge s = sge::of(scratch.data(), scratch.size(), 0);
  ASSERT_FALSE(a.send(1, {&s, 1}, true, std::nullopt, true));
  scratch.assign(max_inline, 'y');  // reuse before any completion
  ASSERT_FALSE(a.send(2, {&s, 1}, true, std::nullopt, true));
  ASSERT_TRUE(drive({&a, &b}, [&] { return a.done.size() == 2 && b.done.size() == 2; }));
  EXPECT_EQ(b.take().byte_len, max_inline);
  EXPECT_EQ(b.text(0, max_inline), std::string(max_inline, 'x'));
  EXPECT_EQ(b.text(4096, max_inline), std::string(max_inline, 'y'));
}

TEST(SoftSendRecv, InlineLimitIsEnforced) {
  auto dev = open_soft();
  const std::uint32_t max_inline = dev->attr().max_inline_data;
  auto pd = std::move(*dev->alloc_pd());
  auto cq = std::move(*dev->create_cq(16));
  EXPECT_FALSE(pd->create_qp({cq.get(), cq.get(), caps_with(16, 16, 1, 1, max_inline + 1)}));
  side a(*dev, caps_with(16, 16, 1, 1, 64)), b(*dev);
  connect_pair(a, b);
  std::string big(65, 'z');
  const sge s = sge::of(big.data(), big.size(), 0);
  EXPECT_EQ(a.send(1, {&s, 1}, true, std::nullopt, true), rpc_errc::invalid_argument);
}

// Many messages of varying sizes arrive complete and in posting order; the receive queue is
// replenished as completions come in, the way the transport does it.
TEST(SoftSendRecv, ManyMessagesInOrder) {
  auto dev = open_soft();
  constexpr int total = 10000;
  constexpr std::size_t slot = 4096;
  constexpr int depth = 64;
  side a(*dev, caps_with(depth, 16)), b(*dev, caps_with(16, depth));
  connect_pair(a, b);
  for (int i = 0; i < depth; ++i) ASSERT_FALSE(b.recv(i, b.at(i * slot, slot)));
  int sent = 0, acked = 0, received = 0;
  auto size_of = [](int i) {
    return static_cast<std::size_t>(8 + (i * 37) % 3000);
  };
  ASSERT_TRUE(drive(
      {&a, &b},
      [&] {
        while (!a.done.empty()) {
          EXPECT_EQ(a.take().status, wc_status::success);
          ++acked;
        }
        while (!b.done.empty()) {
          const work_completion wc = b.take();
          EXPECT_EQ(wc.status, wc_status::success);
          EXPECT_EQ(wc.byte_len, size_of(received));
          int seen = -1;
          std::memcpy(&seen, &b.buf[wc.wr_id * slot], sizeof seen);
          EXPECT_EQ(seen, received) << "out of order";
          EXPECT_EQ(static_cast<unsigned char>(b.buf[wc.wr_id * slot + wc.byte_len - 1]),
                    static_cast<unsigned char>(received));
          ++received;
          EXPECT_FALSE(b.recv(wc.wr_id, b.at(wc.wr_id * slot, slot)));
        }
        while (sent < total && sent - acked < depth) {
          const std::size_t off = static_cast<std::size_t>(sent % depth) * slot;
          const std::size_t n = size_of(sent);
          std::memcpy(&a.buf[off], &sent, sizeof sent);
          a.buf[off + n - 1] = static_cast<std::byte>(sent);
          EXPECT_FALSE(a.send(sent, a.at(off, n)));
          ++sent;
        }
        return received == total && acked == total;
      },
      60s));
}

TEST(SoftSendRecv, ImmediateAndEmptyMessages) {
  auto dev = open_soft();
  side a(*dev), b(*dev);
  connect_pair(a, b);
  ASSERT_FALSE(b.recv(1, b.at(0, 64)));
  ASSERT_FALSE(b.recv(2, b.at(64, 64)));
  a.fill(0, "abc");
  const sge s = a.at(0, 3);
  ASSERT_FALSE(a.send(1, {&s, 1}, true, 0xdeadbeef));
  ASSERT_FALSE(a.send(2, std::span<const sge>{}));
  ASSERT_TRUE(drive({&a, &b}, [&] { return b.done.size() == 2; }));
  const work_completion w1 = b.take();
  EXPECT_EQ(w1.imm, 0xdeadbeefu);
  EXPECT_EQ(w1.byte_len, 3u);
  const work_completion w2 = b.take();
  EXPECT_FALSE(w2.imm);
  EXPECT_EQ(w2.byte_len, 0u);
}

// Unsignaled sends complete silently but keep their send-queue slot until a later signaled
// send completes: a queue of 4 takes 4 unsignaled sends, then refuses until one is signaled.
TEST(SoftSendRecv, UnsignaledSendsHoldSlotsUntilASignaledOneCompletes) {
  auto dev = open_soft();
  side a(*dev, caps_with(4, 16)), b(*dev, caps_with(16, 16));
  connect_pair(a, b);
  for (int i = 0; i < 16; ++i) ASSERT_FALSE(b.recv(i, b.at(i * 64, 64)));
  const sge s = a.at(0, 8);
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(a.send(i, {&s, 1}, false));
  ASSERT_FALSE(a.send(3, {&s, 1}, true));
  EXPECT_EQ(a.send(4, a.at(0, 8)), rpc_errc::server_busy);  // queue full
  ASSERT_TRUE(drive({&a, &b}, [&] { return !a.done.empty(); }));
  EXPECT_EQ(a.take().wr_id, 3u);  // only the signaled one reports
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(a.send(10 + i, {&s, 1}, false)) << i;
  EXPECT_EQ(a.send(20, a.at(0, 8)), rpc_errc::server_busy);
  ASSERT_TRUE(drive({&a, &b}, [&] { return b.done.size() == 8; }));
  EXPECT_TRUE(a.done.empty());
}

TEST(SoftSendRecv, ReceiveQueueLimit) {
  auto dev = open_soft();
  side a(*dev, caps_with(16, 2));
  ASSERT_FALSE(a.recv(1, a.at(0, 8)));  // allowed before connect (INIT)
  ASSERT_FALSE(a.recv(2, a.at(8, 8)));
  EXPECT_EQ(a.recv(3, a.at(16, 8)), rpc_errc::server_busy);
}

TEST(SoftSendRecv, SendBeforeConnectIsRefused) {
  auto dev = open_soft();
  side a(*dev);
  EXPECT_EQ(a.qp->state(), qp_state::init);
  EXPECT_EQ(a.send(1, a.at(0, 8)), rpc_errc::invalid_argument);
}

TEST(SoftSendRecv, SeparateSendAndReceiveQueues) {
  auto dev = open_soft();
  auto pd = std::move(*dev->alloc_pd());
  auto scq = std::move(*dev->create_cq(16));
  auto rcq = std::move(*dev->create_cq(16));
  auto qa = std::move(*pd->create_qp({scq.get(), rcq.get(), {}}));
  side b(*dev);
  std::vector<std::byte> mem(64);
  auto mr = std::move(*pd->reg_mr(mem.data(), mem.size(), access_local_write));
  ASSERT_FALSE(qa->connect(b.qp->local_info(), {}));
  ASSERT_FALSE(b.qp->connect(qa->local_info(), {}));
  const sge r = mr->slice(0, 64);
  recv_wr rw;
  rw.wr_id = 5;
  rw.sg_list = {&r, 1};
  ASSERT_FALSE(qa->post_recv(rw));
  ASSERT_FALSE(b.send(1, b.at(0, 10)));
  work_completion wc[4];
  auto drained = [&](completion_queue& cq) {
    for (int i = 0; i < 500; ++i) {
      b.poll_once();
      if (*cq.poll(wc) == 1) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  };
  ASSERT_TRUE(drained(*rcq));
  EXPECT_EQ(wc[0].wr_id, 5u);
  EXPECT_EQ(wc[0].opcode, wc_opcode::recv);
  send_wr sw;
  sw.wr_id = 6;
  sw.sg_list = {&r, 1};
  ASSERT_FALSE(qa->post_send(sw));
  ASSERT_FALSE(b.recv(1, b.at(0, 64)));
  ASSERT_TRUE(drained(*scq));
  EXPECT_EQ(wc[0].wr_id, 6u);
  EXPECT_EQ(wc[0].opcode, wc_opcode::send);
  EXPECT_EQ(*rcq->poll(wc), 0u);
  qa.reset();
}

// Each side on its own thread (as on two reactors); the registration table is shared.
TEST(SoftSendRecv, EchoAcrossThreads) {
  auto dev = open_soft();
  const qp_caps caps = caps_with(8, 8);
  side a(*dev, caps), b(*dev, caps);
  connect_pair(a, b);
  constexpr int rounds = 2000;
  constexpr std::size_t out = 8192;  // send slots from here on, 8 x 256
  std::thread echo([&] {
    for (int i = 0; i < 8; ++i) ASSERT_FALSE(b.recv(i, b.at(i * 256, 256)));
    int echoed = 0;
    drive(
        {&b},
        [&] {
          while (!b.done.empty()) {
            const work_completion wc = b.take();
            if (wc.opcode != wc_opcode::recv) continue;
            EXPECT_EQ(wc.status, wc_status::success);
            const std::size_t slot = out + (echoed % 8) * 256;
            std::memcpy(&b.buf[slot], &b.buf[wc.wr_id * 256], wc.byte_len);
            EXPECT_FALSE(b.send(wc.wr_id, b.at(slot, wc.byte_len)));
            EXPECT_FALSE(b.recv(wc.wr_id, b.at(wc.wr_id * 256, 256)));
            ++echoed;
          }
          return echoed == rounds;
        },
        60s);
  });
  for (int i = 0; i < 8; ++i) ASSERT_FALSE(a.recv(i, a.at(i * 256, 256)));
  int got = 0;
  auto send_next = [&] {
    const std::size_t slot = out + (got % 8) * 256;
    std::memcpy(&a.buf[slot], &got, sizeof got);
    EXPECT_FALSE(a.send(got, a.at(slot, 100)));
  };
  send_next();
  EXPECT_TRUE(drive(
      {&a},
      [&] {
        while (!a.done.empty()) {
          const work_completion wc = a.take();
          EXPECT_EQ(wc.status, wc_status::success);
          if (wc.opcode != wc_opcode::recv) continue;
          int v = -1;
          std::memcpy(&v, &a.buf[wc.wr_id * 256], sizeof v);
          EXPECT_EQ(v, got);
          ++got;
          EXPECT_FALSE(a.recv(wc.wr_id, a.at(wc.wr_id * 256, 256)));
          if (got < rounds) send_next();
        }
        return got == rounds;
      },
      60s));
  echo.join();
}

}  // namespace
}  // namespace corvid::verbs::test
