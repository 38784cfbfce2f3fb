#include <cstring>
#include <random>

#include "ib_objects.hpp"
#include <arpa/inet.h>

namespace corvid::verbs::ib {

ib_qp::ib_qp(std::shared_ptr<port_context> dev, ibv_qp* qp, const qp_caps& caps)
    : dev_(std::move(dev)), qp_(qp), caps_(caps) {
  std::random_device rd;
  psn_ = rd() & 0xffffff;
}

ib_qp::~ib_qp() { ibv_destroy_qp(qp_); }

qp_state ib_qp::state() const noexcept {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp_, &attr, IBV_QP_STATE, &init) != 0) return qp_state::error;
  switch (attr.qp_state) {
    case IBV_QPS_RESET:
      return qp_state::reset;
    case IBV_QPS_INIT:
      return qp_state::init;
    case IBV_QPS_RTR:
      return qp_state::rtr;
    case IBV_QPS_RTS:
      return qp_state::rts;
    default:
      return qp_state::error;  // SQD, SQE, ERR: nothing more gets through
  }
}

endpoint_info ib_qp::local_info() const {
  endpoint_info info;
  info.qp_num = qp_->qp_num;
  info.lid = dev_->attr.lid;
  info.gid = dev_->attr.gid;
  info.psn = psn_;
  return info;
}

rpc_error ib_qp::connect(const endpoint_info& remote, const connect_options& options) {
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  rtr.path_mtu = dev_->active_mtu;
  rtr.dest_qp_num = remote.qp_num;
  rtr.rq_psn = remote.psn & 0xffffff;
  rtr.max_dest_rd_atomic = 1;
  rtr.min_rnr_timer = options.min_rnr_timer;
  rtr.ah_attr.dlid = remote.lid;
  rtr.ah_attr.sl = 0;
  rtr.ah_attr.port_num = dev_->port;
  const std::array<std::uint8_t, 16> zero{};
  if (remote.gid != zero) {
    // RoCE (and routed IB) address by GID; a zero GID means an IB fabric addressed by LID.
    rtr.ah_attr.is_global = 1;
    std::memcpy(rtr.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
    rtr.ah_attr.grh.sgid_index = dev_->gid_index;
    rtr.ah_attr.grh.hop_limit = 1;
  }
  if (int e = ibv_modify_qp(qp_, &rtr,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    return rpc_error(rpc_errc::connect_failed,
                     "ibverbs: modify_qp to RTR failed (bad remote lid/gid/qp_num?): " +
                         std::string(std::strerror(e)));
  }
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = options.timeout;
  rts.retry_cnt = options.retry_cnt;
  rts.rnr_retry = options.rnr_retry;
  rts.sq_psn = psn_;
  rts.max_rd_atomic = 1;
  if (int e = ibv_modify_qp(qp_, &rts,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
    return rpc_error(rpc_errc::connect_failed,
                     "ibverbs: modify_qp to RTS failed: " + std::string(std::strerror(e)));
  }
  return {};
}

rpc_error ib_qp::post_send(const send_wr& wr) {
  if (wr.sg_list.size() > caps_.max_send_sge) {
    return rpc_error(rpc_errc::invalid_argument, "ibverbs: post_send: too many sges");
  }
  ibv_sge sges[32];
  for (std::size_t i = 0; i < wr.sg_list.size(); ++i) {
    sges[i] = {wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
  }
  ibv_send_wr w{};
  w.wr_id = wr.wr_id;
  w.sg_list = sges;
  w.num_sge = static_cast<int>(wr.sg_list.size());
  w.opcode = wr.imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
  if (wr.imm) w.imm_data = htonl(*wr.imm);
  unsigned flags = 0;
  if (wr.signaled) flags |= IBV_SEND_SIGNALED;
  if (wr.inline_data) flags |= IBV_SEND_INLINE;
  w.send_flags = flags;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(qp_, &w, &bad)) {
    return errno_error("ibverbs: post_send", e);
  }
  return {};
}

rpc_error ib_qp::post_recv(const recv_wr& wr) {
  if (wr.sg_list.size() > caps_.max_recv_sge) {
    return rpc_error(rpc_errc::invalid_argument, "ibverbs: post_recv: too many sges");
  }
  ibv_sge sges[32];
  for (std::size_t i = 0; i < wr.sg_list.size(); ++i) {
    sges[i] = {wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
  }
  ibv_recv_wr w{};
  w.wr_id = wr.wr_id;
  w.sg_list = sges;
  w.num_sge = static_cast<int>(wr.sg_list.size());
  ibv_recv_wr* bad = nullptr;
  if (int e = ibv_post_recv(qp_, &w, &bad)) {
    return errno_error("ibverbs: post_recv", e);
  }
  return {};
}

void ib_qp::set_error() {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(qp_, &attr, IBV_QP_STATE);
}

}  // namespace corvid::verbs::ib
