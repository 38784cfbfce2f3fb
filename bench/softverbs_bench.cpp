// softverbs-bench: SEND throughput between two softverbs queue pairs, in two threads or two
// processes, each side driven the way corvid's reactors drive it (arm, drain, wait on the
// completion queue's fd). It measures the emulation, not any NIC (docs/softverbs.md).
//
//   softverbs-bench [--size 128] [--seconds 2] [--window 16] [--recvs 16] [--processes]
//                   [--busy-poll]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "verbs/verbs.hpp"
#include <sys/wait.h>

namespace {

using namespace corvid::verbs;
using clock_type = std::chrono::steady_clock;

struct options {
  std::size_t size = 128;
  double seconds = 2;
  std::uint32_t window = 16;
  std::uint32_t recvs = 16;
  bool processes = false;
  bool busy_poll = false;
};

struct side {
  std::unique_ptr<device> dev;
  std::unique_ptr<protection_domain> pd;
  std::unique_ptr<completion_queue> cq;
  std::unique_ptr<queue_pair> qp;
  std::vector<std::byte> buf;
  std::unique_ptr<memory_region> mr;
  ~side() {
    qp.reset();
    mr.reset();
  }
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "softverbs-bench: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T must(result<T> r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.error().message());
  return std::move(*r);
}

std::unique_ptr<side> make_side(const options& o, std::uint32_t slots) {
  auto s = std::make_unique<side>();
  device_options dopt;
  dopt.provider = "soft";
  s->dev = must(open_device(dopt), "open_device");
  s->pd = must(s->dev->alloc_pd(), "alloc_pd");
  s->cq = must(s->dev->create_cq(4 * (o.window + o.recvs)), "create_cq");
  qp_caps caps;
  caps.max_send_wr = o.window;
  caps.max_recv_wr = o.recvs;
  s->qp = must(s->pd->create_qp({s->cq.get(), s->cq.get(), caps}), "create_qp");
  s->buf.assign(std::max<std::size_t>(o.size, 1) * slots, std::byte{1});
  s->mr = must(s->pd->reg_mr(s->buf.data(), s->buf.size(), access_local_write), "reg_mr");
  return s;
}

// Waits for and returns the next completions, as an event loop would.
std::size_t next(side& s, std::span<work_completion> wcs, bool busy) {
  for (;;) {
    if (!busy) s.cq->request_notify();
    const std::size_t n = must(s.cq->poll(wcs), "poll");
    if (n != 0 || busy) return n;
    pollfd p{s.cq->event_fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    s.cq->consume_events();
  }
}

// Receiver: keep `recvs` receives posted until the sender's final zero-length message.
void run_receiver(side& s, const options& o) {
  const std::size_t slot = std::max<std::size_t>(o.size, 1);
  auto post = [&](std::uint64_t i) {
    const sge g = s.mr->slice(i * slot, slot);
    recv_wr wr;
    wr.wr_id = i;
    wr.sg_list = {&g, 1};
    if (auto e = s.qp->post_recv(wr)) die("post_recv: " + e.message());
  };
  for (std::uint32_t i = 0; i < o.recvs; ++i) post(i);
  work_completion wcs[64];
  for (;;) {
    const std::size_t n = next(s, wcs, o.busy_poll);
    for (std::size_t i = 0; i < n; ++i) {
      if (wcs[i].status != wc_status::success)
        die("receive failed: " + std::string(to_string(wcs[i].status)));
      if (wcs[i].byte_len == 0 && o.size != 0) return;
      post(wcs[i].wr_id);
    }
  }
}

void run_sender(side& s, const options& o) {
  const std::size_t slot = std::max<std::size_t>(o.size, 1);
  std::uint64_t posted = 0, completed = 0;
  auto post = [&](std::size_t length) {
    const sge g = s.mr->slice((posted % o.window) * slot, length);
    send_wr wr;
    wr.wr_id = posted++;
    wr.sg_list = {&g, 1};
    if (auto e = s.qp->post_send(wr)) die("post_send: " + e.message());
  };
  work_completion wcs[64];
  const auto start = clock_type::now();
  const auto end = start + std::chrono::duration<double>(o.seconds);
  while (clock_type::now() < end) {
    while (posted - completed < o.window) post(o.size);
    const std::size_t n = next(s, wcs, o.busy_poll);
    for (std::size_t i = 0; i < n; ++i) {
      if (wcs[i].status != wc_status::success)
        die("send failed: " + std::string(to_string(wcs[i].status)));
      ++completed;
    }
  }
  const double secs = std::chrono::duration<double>(clock_type::now() - start).count();
  const double msgs = static_cast<double>(completed) / secs;
  while (completed < posted) completed += next(s, wcs, o.busy_poll);
  post(0);  // tell the receiver to stop
  while (completed < posted) completed += next(s, wcs, o.busy_poll);
  const double bytes = msgs * static_cast<double>(o.size);
  std::printf("size %zu B  window %u  recvs %u  %s%s:  %.0f msg/s  %.3f GB/s  (%.2f Gb/s)\n",
              o.size, o.window, o.recvs, o.processes ? "processes" : "threads",
              o.busy_poll ? ", busy-poll" : "", msgs, bytes / 1e9, bytes * 8 / 1e9);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--size") {
      o.size = std::strtoull(value(), nullptr, 10);
    } else if (a == "--seconds") {
      o.seconds = std::strtod(value(), nullptr);
    } else if (a == "--window") {
      o.window = static_cast<std::uint32_t>(std::strtoul(value(), nullptr, 10));
    } else if (a == "--recvs") {
      o.recvs = static_cast<std::uint32_t>(std::strtoul(value(), nullptr, 10));
    } else if (a == "--processes") {
      o.processes = true;
    } else if (a == "--busy-poll") {
      o.busy_poll = true;
    } else {
      die("unknown option " + a +
          " (--size N --seconds S --window N --recvs N --processes --busy-poll)");
    }
  }
  if (o.size == 0 || o.window == 0 || o.recvs == 0) die("size, window and recvs must be > 0");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (!o.processes) {
    auto tx = make_side(o, o.window);
    auto rx = make_side(o, o.recvs);
    if (auto e = tx->qp->connect(rx->qp->local_info(), {})) die(e.message());
    if (auto e = rx->qp->connect(tx->qp->local_info(), {})) die(e.message());
    std::thread receiver([&] { run_receiver(*rx, o); });
    run_sender(*tx, o);
    receiver.join();
    return 0;
  }
  // Two processes: endpoint_info crosses a pair of pipes (the transport uses TCP).
  int up[2], down[2];
  if (::pipe(up) != 0 || ::pipe(down) != 0) die("pipe");
  const pid_t pid = ::fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    auto rx = make_side(o, o.recvs);
    const endpoint_info mine = rx->qp->local_info();
    endpoint_info peer{};
    if (::write(up[1], &mine, sizeof mine) != sizeof mine ||
        ::read(down[0], &peer, sizeof peer) != sizeof peer) {
      ::_exit(2);
    }
    if (auto e = rx->qp->connect(peer, {})) die(e.message());
    run_receiver(*rx, o);
    rx.reset();
    ::_exit(0);
  }
  auto tx = make_side(o, o.window);
  endpoint_info peer{};
  if (::read(up[0], &peer, sizeof peer) != sizeof peer) die("no endpoint from the child");
  const endpoint_info mine = tx->qp->local_info();
  if (::write(down[1], &mine, sizeof mine) != sizeof mine) die("write");
  if (auto e = tx->qp->connect(peer, {})) die(e.message());
  run_sender(*tx, o);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
