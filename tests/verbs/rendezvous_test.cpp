// softverbs rendezvous against a local attacker (hostile review): queue pair numbers were
// sequential and a queue pair's socket was named from its device's gid (which every handshake
// reply reveals) and its number, so another process could call the next queue pair's socket
// before the real peer did and, by staying silent, keep the legitimate client hanging.
#include <csignal>
#include <unistd.h>

#include "soft_pair.hpp"
#include "verbs/soft/context.hpp"
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

namespace corvid::verbs::test {
namespace {

bool can_call(const std::string& name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0;
  ::close(fd);
  return ok;
}

// What an attacker knows: the gid (from any handshake) and, at best, a queue pair number.
// Neither the number alone nor its successor names a socket.
TEST(SoftRendezvous, TheGidAndQueuePairNumberDoNotNameTheSocket) {
  auto dev = open_soft();
  side a(*dev);
  side b(*dev);
  const endpoint_info ia = a.qp->local_info();
  const endpoint_info ib = b.qp->local_info();
  EXPECT_NE(ib.qp_num, ia.qp_num + 1) << "queue pair numbers are sequential";
  // The old naming scheme, gid + number: nobody listens there.
  const std::string full = soft::listen_name(ib.gid, ib.qp_num, ib.psn);
  EXPECT_FALSE(can_call(full.substr(0, full.rfind('.'))))
      << "the socket is reachable from gid and qp_num alone";
  // The full endpoint_info (what the handshake gives the real peer) does name it.
  EXPECT_TRUE(can_call(full));
}

// Even a caller that learned the name is hung up on unless it is the process the peer's gid
// names: the real peer's link comes up and carries a SEND.
TEST(SoftRendezvous, ACallerFromAnotherProcessCannotTakeTheLink) {
  auto dev = open_soft();
  side a(*dev);
  side b(*dev);
  // Same gid: the queue pair with the larger number is the passive side, whose listener
  // takes the link; the attacker calls it first.
  side& passive = a.qp->qp_num() > b.qp->qp_num() ? a : b;
  side& active = &passive == &a ? b : a;
  const endpoint_info ip = passive.qp->local_info();
  const std::string name = soft::listen_name(ip.gid, ip.qp_num, ip.psn);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the attacker: calls, then says nothing
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const char ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0 ? 'y' : 'n';
    [[maybe_unused]] const ssize_t w = ::write(ready[1], &ok, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  struct reap {
    pid_t pid;
    ~reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reaper{child};
  ASSERT_EQ(ok, 'y') << "the attacker could not call the listener";

  connect_pair(active, passive);
  active.fill(0, "hello");
  ASSERT_FALSE(passive.recv(1, passive.at(0, 64)));
  ASSERT_FALSE(active.send(2, active.at(0, 5)));
  ASSERT_TRUE(drive(
      {&active, &passive}, [&] { return !active.done.empty() && !passive.done.empty(); }, 3s))
      << "the attacker's silent call kept the real peer out";
  EXPECT_EQ(active.take().status, wc_status::success);
  const work_completion wc = passive.take();
  EXPECT_EQ(wc.status, wc_status::success);
  EXPECT_EQ(passive.text(0, 5), "hello");
}

}  // namespace
}  // namespace corvid::verbs::test
