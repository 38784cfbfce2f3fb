#include <cerrno>
#include <cstring>

#include "ib_objects.hpp"
#include <arpa/inet.h>

namespace corvid::verbs::ib {
namespace {

wc_status map_status(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS:
      return wc_status::success;
    case IBV_WC_LOC_LEN_ERR:
      return wc_status::loc_len_err;
    case IBV_WC_LOC_QP_OP_ERR:
      return wc_status::loc_qp_op_err;
    case IBV_WC_LOC_PROT_ERR:
      return wc_status::loc_prot_err;
    case IBV_WC_LOC_ACCESS_ERR:
      return wc_status::loc_access_err;
    case IBV_WC_WR_FLUSH_ERR:
      return wc_status::wr_flush_err;
    case IBV_WC_REM_INV_REQ_ERR:
      return wc_status::rem_inv_req_err;
    case IBV_WC_REM_ACCESS_ERR:
      return wc_status::rem_access_err;
    case IBV_WC_REM_OP_ERR:
      return wc_status::rem_op_err;
    case IBV_WC_RETRY_EXC_ERR:
      return wc_status::retry_exc_err;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return wc_status::rnr_retry_exc_err;
    default:
      return wc_status::general_err;
  }
}

}  // namespace

ib_cq::~ib_cq() {
  ibv_destroy_cq(cq_);
  ibv_destroy_comp_channel(channel_);
}

rpc_error ib_cq::request_notify() {
  if (int e = ibv_req_notify_cq(cq_, 0)) return errno_error("ibverbs: req_notify_cq", e);
  return {};
}

void ib_cq::consume_events() {
  // The channel fd is non-blocking: read every queued event, then acknowledge them at once
  // (acknowledging is a mutex round trip in libibverbs).
  unsigned n = 0;
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ++n;
  if (n != 0) ibv_ack_cq_events(cq_, n);
}

result<std::size_t> ib_cq::poll(std::span<work_completion> out) {
  ibv_wc wcs[32];
  std::size_t total = 0;
  while (total < out.size()) {
    const int want = static_cast<int>(std::min<std::size_t>(32, out.size() - total));
    const int n = ibv_poll_cq(cq_, want, wcs);
    if (n < 0) return unexpected(errno_error("ibverbs: poll_cq", errno));
    for (int i = 0; i < n; ++i) {
      work_completion& wc = out[total++];
      wc = {};
      wc.wr_id = wcs[i].wr_id;
      wc.status = map_status(wcs[i].status);
      wc.opcode = (wcs[i].opcode & IBV_WC_RECV) != 0 ? wc_opcode::recv : wc_opcode::send;
      wc.byte_len = wcs[i].byte_len;
      wc.qp_num = wcs[i].qp_num;
      wc.vendor_err = wcs[i].vendor_err;
      if ((wcs[i].wc_flags & IBV_WC_WITH_IMM) != 0) wc.imm = ntohl(wcs[i].imm_data);
    }
    if (n < want) break;
  }
  return total;
}

}  // namespace corvid::verbs::ib
