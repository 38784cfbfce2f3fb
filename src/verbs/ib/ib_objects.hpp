#pragma once
// The ibverbs provider: each class owns one libibverbs object and maps the interface's calls
// onto it. Only compiled when libibverbs is found (src/CMakeLists.txt).
#include <memory>

#include "../verbs.hpp"
#include <infiniband/verbs.h>

namespace corvid::verbs::ib {

// The opened device context and the port/gid chosen at open_device, shared by its objects.
struct port_context {
  ibv_context* ctx = nullptr;
  std::uint8_t port = 1;
  std::uint8_t gid_index = 0;
  device_attr attr;
  ibv_mtu active_mtu = IBV_MTU_1024;
  ~port_context();
};

rpc_error errno_error(const char* what, int err);

class ib_cq final : public completion_queue {
 public:
  ib_cq(std::shared_ptr<port_context> dev, ibv_comp_channel* channel, ibv_cq* cq)
      : dev_(std::move(dev)), channel_(channel), cq_(cq) {}
  ~ib_cq() override;
  int event_fd() const noexcept override { return channel_->fd; }
  rpc_error request_notify() override;
  void consume_events() override;
  result<std::size_t> poll(std::span<work_completion> out) override;
  ibv_cq* native() const noexcept { return cq_; }

 private:
  std::shared_ptr<port_context> dev_;
  ibv_comp_channel* channel_;
  ibv_cq* cq_;
};

class ib_qp final : public queue_pair {
 public:
  ib_qp(std::shared_ptr<port_context> dev, ibv_qp* qp, const qp_caps& caps);
  ~ib_qp() override;
  std::uint32_t qp_num() const noexcept override { return qp_->qp_num; }
  qp_state state() const noexcept override;
  endpoint_info local_info() const override;
  rpc_error connect(const endpoint_info& remote, const connect_options& options) override;
  rpc_error post_send(const send_wr& wr) override;
  rpc_error post_recv(const recv_wr& wr) override;
  void set_error() override;
  const qp_caps& caps() const noexcept override { return caps_; }

 private:
  std::shared_ptr<port_context> dev_;
  ibv_qp* qp_;
  qp_caps caps_;
  std::uint32_t psn_;
};

}  // namespace corvid::verbs::ib
