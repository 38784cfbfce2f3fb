// Across processes: a forked child opens its own softverbs device, connects to us over the
// out-of-band pipe exchange (standing in for the transport's TCP side channel), echoes, and
// then dies. Our outstanding work must end in flush errors, not hang.
#include <signal.h>
#include <unistd.h>

#include "soft_pair.hpp"
#include <sys/wait.h>

namespace corvid::verbs::test {
namespace {

enum class child_exit { exit, kill };

// Child: echo `rounds` messages back, then leave the way the test asks.
[[noreturn]] void run_child(int to_parent, int from_parent, int rounds, child_exit how) {
  auto dev = open_device(soft_options());
  if (!dev) ::_exit(10);
  int code = 0;
  {
    side s(**dev);
    const endpoint_info mine = s.qp->local_info();
    endpoint_info peer{};
    for (int i = 0; i < 8; ++i) s.recv(i, s.at(i * 1024, 1024));
    if (::write(to_parent, &mine, sizeof mine) != sizeof mine ||
        ::read(from_parent, &peer, sizeof peer) != sizeof peer) {
      ::_exit(11);
    }
    if (s.qp->connect(peer, {})) ::_exit(12);
    int echoed = 0;
    const bool ok = drive(
        {&s},
        [&] {
          while (!s.done.empty()) {
            const work_completion wc = s.take();
            if (wc.status != wc_status::success) code = 13;
            if (wc.opcode != wc_opcode::recv) continue;
            const std::size_t out = 16384 + static_cast<std::size_t>(echoed % 8) * 1024;
            std::memcpy(&s.buf[out], &s.buf[wc.wr_id * 1024], wc.byte_len);
            s.send(wc.wr_id, s.at(out, wc.byte_len));
            s.recv(wc.wr_id, s.at(wc.wr_id * 1024, 1024));
            ++echoed;
          }
          return echoed == rounds;
        },
        30s);
    if (!ok) code = 14;
    // Let the last echoes reach the parent before leaving.
    drive(
        {&s}, [&] { return false; }, 200ms);
    if (how == child_exit::kill) ::kill(::getpid(), SIGKILL);
  }
  ::_exit(code);
}

void echo_then_peer_dies(child_exit how) {
  int up[2], down[2];
  ASSERT_EQ(::pipe(up), 0);
  ASSERT_EQ(::pipe(down), 0);
  constexpr int rounds = 50;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) run_child(up[1], down[0], rounds, how);
  ::close(up[1]);
  ::close(down[0]);

  auto dev = open_soft();
  side s(*dev);
  for (int i = 0; i < 8; ++i) ASSERT_FALSE(s.recv(i, s.at(i * 1024, 1024)));
  endpoint_info peer{};
  ASSERT_EQ(::read(up[0], &peer, sizeof peer), static_cast<ssize_t>(sizeof peer));
  const endpoint_info mine = s.qp->local_info();
  ASSERT_EQ(::write(down[1], &mine, sizeof mine), static_cast<ssize_t>(sizeof mine));
  ASSERT_FALSE(s.qp->connect(peer, {}));

  int got = 0;
  auto send_next = [&] {
    const std::size_t out = 16384 + static_cast<std::size_t>(got % 8) * 1024;
    std::string msg = "message " + std::to_string(got);
    s.fill(out, msg);
    ASSERT_FALSE(s.send(got, s.at(out, msg.size())));
  };
  send_next();
  ASSERT_TRUE(drive({&s}, [&] {
    while (!s.done.empty()) {
      const work_completion wc = s.take();
      EXPECT_EQ(wc.status, wc_status::success);
      if (wc.opcode != wc_opcode::recv) continue;
      EXPECT_EQ(s.text(wc.wr_id * 1024, wc.byte_len), "message " + std::to_string(got));
      ++got;
      EXPECT_FALSE(s.recv(wc.wr_id, s.at(wc.wr_id * 1024, 1024)));
      if (got < rounds) send_next();
    }
    return got == rounds;
  }));

  // The child leaves: every receive we have posted flushes, the queue pair errors.
  ASSERT_TRUE(drive({&s}, [&] { return s.done.size() >= 8; }));
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  if (how == child_exit::kill) {
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  int flushed = 0;
  while (!s.done.empty()) flushed += s.take().status == wc_status::wr_flush_err ? 1 : 0;
  EXPECT_EQ(flushed, 8);
  EXPECT_EQ(s.qp->state(), qp_state::error);
  // And a send posted now fails at once rather than waiting for anyone.
  ASSERT_FALSE(s.send(99, s.at(0, 8)));
  ASSERT_TRUE(drive({&s}, [&] { return !s.done.empty(); }));
  EXPECT_EQ(s.take().status, wc_status::wr_flush_err);
  ::close(up[0]);
  ::close(down[1]);
}

TEST(SoftProcess, EchoThenPeerExits) { echo_then_peer_dies(child_exit::exit); }
TEST(SoftProcess, EchoThenPeerIsKilled) { echo_then_peer_dies(child_exit::kill); }

// Killed while our send waits for a receive the child will never post.
TEST(SoftProcess, PeerKilledWithSendOutstanding) {
  int up[2], down[2];
  ASSERT_EQ(::pipe(up), 0);
  ASSERT_EQ(::pipe(down), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto dev = open_device(soft_options());
    if (!dev) ::_exit(10);
    side s(**dev);
    const endpoint_info mine = s.qp->local_info();
    endpoint_info peer{};
    if (::write(up[1], &mine, sizeof mine) != sizeof mine ||
        ::read(down[0], &peer, sizeof peer) != sizeof peer || s.qp->connect(peer, {})) {
      ::_exit(11);
    }
    drive(
        {&s}, [&] { return false; }, 30s);  // never posts a receive
    ::_exit(0);
  }
  auto dev = open_soft();
  side s(*dev);
  endpoint_info peer{};
  ASSERT_EQ(::read(up[0], &peer, sizeof peer), static_cast<ssize_t>(sizeof peer));
  const endpoint_info mine = s.qp->local_info();
  ASSERT_EQ(::write(down[1], &mine, sizeof mine), static_cast<ssize_t>(sizeof mine));
  ASSERT_FALSE(s.qp->connect(peer, {}));
  ASSERT_FALSE(s.send(1, s.at(0, 100)));
  ASSERT_FALSE(s.send(2, s.at(0, 100)));
  EXPECT_FALSE(drive(
      {&s}, [&] { return !s.done.empty(); }, 100ms));  // RNR: waiting
  ::kill(pid, SIGKILL);
  ASSERT_TRUE(drive({&s}, [&] { return s.done.size() == 2; }));
  EXPECT_EQ(s.take().status, wc_status::retry_exc_err);
  EXPECT_EQ(s.take().status, wc_status::wr_flush_err);
  ::waitpid(pid, nullptr, 0);
  for (int fd : {up[0], up[1], down[0], down[1]}) ::close(fd);
}

}  // namespace
}  // namespace corvid::verbs::test
