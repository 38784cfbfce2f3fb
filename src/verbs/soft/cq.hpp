#pragma once
// A softverbs completion queue. Its event fd is an epoll instance holding an eventfd (the
// completion channel: written when a completion arrives while armed) and every fd of the
// queue pairs completing into it (their socket, listener and timer). So the one fd a reactor
// waits on becomes readable both for a notification and for provider work that may produce
// one — no thread: the progress happens in poll()/consume_events() on the caller's thread.
#include <deque>

#include "../verbs.hpp"
#include "unique_fd.hpp"
#include <sys/epoll.h>

namespace corvid::verbs::soft {

class soft_qp;

class soft_cq final : public completion_queue {
 public:
  static result<std::unique_ptr<soft_cq>> create(std::uint32_t cqe);

  int event_fd() const noexcept override { return epoll_.get(); }
  rpc_error request_notify() override;
  void consume_events() override;
  result<std::size_t> poll(std::span<work_completion> out) override;

  // For queue pairs: deliver a completion; watch / unwatch / re-mask one of their fds.
  void push(const work_completion& wc);
  void watch(int fd, std::uint32_t events, soft_qp* qp);
  void unwatch(int fd) noexcept;

 private:
  soft_cq(unique_fd epoll, unique_fd event) : epoll_(std::move(epoll)), event_(std::move(event)) {}
  // Runs the progress of every queue pair with a ready fd.
  void progress();

  unique_fd epoll_;
  unique_fd event_;
  std::deque<work_completion> entries_;
  bool armed_ = false;
};

}  // namespace corvid::verbs::soft
