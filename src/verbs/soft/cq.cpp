#include "cq.hpp"

#include <cerrno>
#include <cstring>

#include "qp.hpp"
#include <sys/eventfd.h>

namespace corvid::verbs::soft {

result<std::unique_ptr<soft_cq>> soft_cq::create(std::uint32_t /*cqe*/) {
  unique_fd ep(::epoll_create1(EPOLL_CLOEXEC));
  unique_fd ev(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!ep || !ev) {
    return unexpected(rpc_error(rpc_errc::server_busy,
                                std::string("softverbs: create_cq: ") + std::strerror(errno)));
  }
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.ptr = nullptr;  // the eventfd; queue pairs register themselves
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, ev.get(), &e) != 0) {
    return unexpected(rpc_error(rpc_errc::server_busy,
                                std::string("softverbs: create_cq: ") + std::strerror(errno)));
  }
  return std::unique_ptr<soft_cq>(new soft_cq(std::move(ep), std::move(ev)));
}

rpc_error soft_cq::request_notify() {
  armed_ = true;
  return {};
}

void soft_cq::push(const work_completion& wc) {
  entries_.push_back(wc);
  if (armed_) {
    armed_ = false;
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(event_.get(), &one, sizeof one);
  }
}

void soft_cq::consume_events() {
  progress();
  std::uint64_t count;
  [[maybe_unused]] auto n = ::read(event_.get(), &count, sizeof count);
}

result<std::size_t> soft_cq::poll(std::span<work_completion> out) {
  progress();
  std::size_t n = 0;
  while (n < out.size() && !entries_.empty()) {
    out[n++] = entries_.front();
    entries_.pop_front();
  }
  return n;
}

void soft_cq::progress() {
  epoll_event events[32];
  // A few rounds at most: a queue pair's progress reads its socket dry, so a second round
  // only finds what arrived meanwhile.
  for (int round = 0; round < 4; ++round) {
    const int n = ::epoll_wait(epoll_.get(), events, 32, 0);
    if (n <= 0) return;
    bool work = false;
    for (int i = 0; i < n; ++i) {
      if (auto* qp = static_cast<soft_qp*>(events[i].data.ptr)) {
        qp->progress();
        work = true;
      }
    }
    if (!work || n < 32) return;
  }
}

void soft_cq::watch(int fd, std::uint32_t events, soft_qp* qp) {
  epoll_event e{};
  e.events = events;
  e.data.ptr = qp;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &e) != 0) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &e);
  }
}

void soft_cq::unwatch(int fd) noexcept { ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr); }

}  // namespace corvid::verbs::soft
