#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <optional>

#include "../providers.hpp"
#include "ib_objects.hpp"

namespace corvid::verbs::ib {

port_context::~port_context() {
  if (ctx != nullptr) ibv_close_device(ctx);
}

rpc_error errno_error(const char* what, int err) {
  const rpc_errc code =
      err == ENOMEM || err == EAGAIN ? rpc_errc::server_busy : rpc_errc::invalid_argument;
  return rpc_error(code, std::string(what) + ": " + std::strerror(err));
}

namespace {

class ib_mr final : public memory_region {
 public:
  explicit ib_mr(ibv_mr* mr) : mr_(mr) {}
  ~ib_mr() override { ibv_dereg_mr(mr_); }
  std::uint32_t lkey() const noexcept override { return mr_->lkey; }
  std::uint32_t rkey() const noexcept override { return mr_->rkey; }
  std::byte* addr() const noexcept override { return static_cast<std::byte*>(mr_->addr); }
  std::size_t length() const noexcept override { return mr_->length; }

 private:
  ibv_mr* mr_;
};

class ib_pd final : public protection_domain {
 public:
  ib_pd(std::shared_ptr<port_context> dev, ibv_pd* pd) : dev_(std::move(dev)), pd_(pd) {}
  ~ib_pd() override { ibv_dealloc_pd(pd_); }

  result<std::unique_ptr<memory_region>> reg_mr(void* p, std::size_t n,
                                                std::uint32_t access) override {
    int flags = 0;
    if ((access & access_local_write) != 0) flags |= IBV_ACCESS_LOCAL_WRITE;
    if ((access & access_remote_write) != 0) flags |= IBV_ACCESS_REMOTE_WRITE;
    if ((access & access_remote_read) != 0) flags |= IBV_ACCESS_REMOTE_READ;
    ibv_mr* mr = ibv_reg_mr(pd_, p, n, flags);
    if (mr == nullptr) return unexpected(errno_error("ibverbs: reg_mr", errno));
    return std::unique_ptr<memory_region>(std::make_unique<ib_mr>(mr));
  }

  result<std::unique_ptr<queue_pair>> create_qp(const qp_init& init) override {
    auto* scq = dynamic_cast<ib_cq*>(init.send_cq);
    auto* rcq = dynamic_cast<ib_cq*>(init.recv_cq);
    if (scq == nullptr || rcq == nullptr) {
      return unexpected(
          rpc_error(rpc_errc::invalid_argument,
                    "ibverbs: create_qp: send_cq and recv_cq must be ibverbs queues"));
    }
    ibv_qp_init_attr attr{};
    attr.send_cq = scq->native();
    attr.recv_cq = rcq->native();
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    attr.cap.max_send_wr = init.caps.max_send_wr;
    attr.cap.max_recv_wr = init.caps.max_recv_wr;
    attr.cap.max_send_sge = init.caps.max_send_sge;
    attr.cap.max_recv_sge = init.caps.max_recv_sge;
    attr.cap.max_inline_data = init.caps.max_inline_data;
    ibv_qp* qp = ibv_create_qp(pd_, &attr);
    if (qp == nullptr) return unexpected(errno_error("ibverbs: create_qp", errno));
    // create_qp reports the caps granted, which may exceed those asked for.
    qp_caps granted{attr.cap.max_send_wr, attr.cap.max_recv_wr, attr.cap.max_send_sge,
                    attr.cap.max_recv_sge, attr.cap.max_inline_data};
    auto q = std::make_unique<ib_qp>(dev_, qp, granted);
    ibv_qp_attr to_init{};
    to_init.qp_state = IBV_QPS_INIT;
    to_init.pkey_index = 0;
    to_init.port_num = dev_->port;
    to_init.qp_access_flags = 0;  // SEND/RECV only: no remote access to our memory
    if (int e = ibv_modify_qp(
            qp, &to_init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
      return unexpected(errno_error("ibverbs: modify_qp to INIT", e));
    }
    return std::unique_ptr<queue_pair>(std::move(q));
  }

 private:
  std::shared_ptr<port_context> dev_;
  ibv_pd* pd_;
};

// A port's counter from /sys/class/infiniband/<dev>/ports/<port>/hw_counters; nullopt when the
// driver does not export it.
std::optional<std::uint64_t> hw_counter(const std::string& dev, int port, const char* name) {
  std::ifstream in("/sys/class/infiniband/" + dev + "/ports/" + std::to_string(port) +
                   "/hw_counters/" + name);
  std::uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

class ib_device final : public device {
 public:
  explicit ib_device(std::shared_ptr<port_context> dev) : dev_(std::move(dev)) {}
  const device_attr& attr() const noexcept override { return dev_->attr; }

  // libibverbs has no per-queue-pair RNR count, but the kernel counts RNR NAKs per port:
  // send_rnr_err (this port NAKed: its receives ran out) and rcvd_rnr_err (its peer's did;
  // the sending queue pair backed off). Both directions count, so one device seen from either
  // end of a connection, or looping back to itself, shows that receives ran out.
  std::optional<std::uint64_t> rnr_naks() const noexcept override {
    try {
      const auto sent = hw_counter(dev_->attr.name, dev_->port, "send_rnr_err");
      const auto received = hw_counter(dev_->attr.name, dev_->port, "rcvd_rnr_err");
      if (!sent && !received) return std::nullopt;
      return sent.value_or(0) + received.value_or(0);
    } catch (...) {  // allocation failure building the path: no count rather than a crash
      return std::nullopt;
    }
  }

  result<std::unique_ptr<protection_domain>> alloc_pd() override {
    ibv_pd* pd = ibv_alloc_pd(dev_->ctx);
    if (pd == nullptr) return unexpected(errno_error("ibverbs: alloc_pd", errno));
    return std::unique_ptr<protection_domain>(std::make_unique<ib_pd>(dev_, pd));
  }

  result<std::unique_ptr<completion_queue>> create_cq(std::uint32_t cqe) override {
    ibv_comp_channel* channel = ibv_create_comp_channel(dev_->ctx);
    if (channel == nullptr) return unexpected(errno_error("ibverbs: create_comp_channel", errno));
    const int flags = ::fcntl(channel->fd, F_GETFL);
    ::fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK);
    ibv_cq* cq = ibv_create_cq(dev_->ctx, static_cast<int>(cqe), nullptr, channel, 0);
    if (cq == nullptr) {
      const int e = errno;
      ibv_destroy_comp_channel(channel);
      return unexpected(errno_error("ibverbs: create_cq", e));
    }
    return std::unique_ptr<completion_queue>(std::make_unique<ib_cq>(dev_, channel, cq));
  }

 private:
  std::shared_ptr<port_context> dev_;
};

std::uint32_t mtu_bytes(ibv_mtu m) { return 128u << static_cast<unsigned>(m); }

// ibverbs has no "max inline" attribute: the only way to learn it is to create a queue pair
// asking for some and see whether the driver accepts (and what it grants).
std::uint32_t probe_max_inline(ibv_context* ctx) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = pd != nullptr ? ibv_create_cq(ctx, 1, nullptr, nullptr, 0) : nullptr;
  std::uint32_t best = 0;
  if (cq != nullptr) {
    for (std::uint32_t want = 1024; want >= 32 && best == 0; want /= 2) {
      ibv_qp_init_attr attr{};
      attr.send_cq = cq;
      attr.recv_cq = cq;
      attr.qp_type = IBV_QPT_RC;
      attr.cap = {1, 1, 1, 1, want};
      if (ibv_qp* qp = ibv_create_qp(pd, &attr)) {
        best = attr.cap.max_inline_data;
        ibv_destroy_qp(qp);
      }
    }
    ibv_destroy_cq(cq);
  }
  if (pd != nullptr) ibv_dealloc_pd(pd);
  return best;
}

}  // namespace

result<std::unique_ptr<device>> open_device(const device_options& options) {
  int num = 0;
  ibv_device** list = ibv_get_device_list(&num);
  if (list == nullptr || num == 0) {
    const int e = errno;
    if (list != nullptr) ibv_free_device_list(list);
    return unexpected(rpc_error(
        rpc_errc::no_rdma_device,
        std::string("ibverbs: no RDMA device found") +
            (list == nullptr ? std::string(" (") + std::strerror(e) + ")" : std::string()) +
            "; for development without a NIC use the soft provider (CORVID_VERBS_PROVIDER=soft)"));
  }
  ibv_device* chosen = nullptr;
  for (int i = 0; i < num && chosen == nullptr; ++i) {
    if (options.device_name.empty() || options.device_name == ibv_get_device_name(list[i])) {
      chosen = list[i];
    }
  }
  if (chosen == nullptr) {
    ibv_free_device_list(list);
    return unexpected(rpc_error(rpc_errc::no_rdma_device,
                                "ibverbs: no RDMA device named '" + options.device_name + "'"));
  }
  auto dev = std::make_shared<port_context>();
  dev->ctx = ibv_open_device(chosen);
  const std::string name = ibv_get_device_name(chosen);
  ibv_free_device_list(list);
  if (dev->ctx == nullptr) {
    return unexpected(rpc_error(rpc_errc::no_rdma_device,
                                "ibverbs: cannot open " + name + ": " + std::strerror(errno)));
  }
  dev->port = options.port;
  dev->gid_index = options.gid_index;
  ibv_device_attr da{};
  ibv_port_attr pa{};
  ibv_gid gid{};
  if (ibv_query_device(dev->ctx, &da) != 0 || ibv_query_port(dev->ctx, options.port, &pa) != 0) {
    return unexpected(rpc_error(rpc_errc::invalid_argument, "ibverbs: " + name + " has no port " +
                                                                std::to_string(options.port)));
  }
  if (ibv_query_gid(dev->ctx, options.port, options.gid_index, &gid) != 0) {
    return unexpected(rpc_error(rpc_errc::invalid_argument,
                                "ibverbs: " + name + " port " + std::to_string(options.port) +
                                    " has no gid index " + std::to_string(options.gid_index)));
  }
  // An empty GID table entry reads as zeros (rxe has 1024 slots, most of them empty). Taking
  // it would address the queue pair as InfiniBand (no GRH) and fail only at connect, as "bad
  // remote lid/gid" blamed on the peer: refuse it here, naming the entries that work.
  if (std::all_of(std::begin(gid.raw), std::end(gid.raw), [](std::uint8_t b) { return b == 0; })) {
    std::string valid;
    int listed = 0;
    for (int i = 0; i < pa.gid_tbl_len && listed < 16; ++i) {
      ibv_gid g{};
      if (ibv_query_gid(dev->ctx, options.port, i, &g) != 0) continue;
      if (std::all_of(std::begin(g.raw), std::end(g.raw), [](std::uint8_t b) { return b == 0; }))
        continue;
      valid += (listed++ == 0 ? "" : ", ") + std::to_string(i);
    }
    return unexpected(rpc_error(
        rpc_errc::invalid_argument,
        "ibverbs: " + name + " port " + std::to_string(options.port) + " gid index " +
            std::to_string(options.gid_index) + " is an empty entry (all zeros); " +
            (valid.empty() ? std::string("the port has no valid gid") : "valid indices: " + valid) +
            " (ibv_config::gid_index; show_gids or ibv_devinfo -v lists them)"));
  }
  if (pa.state != IBV_PORT_ACTIVE) {
    return unexpected(rpc_error(rpc_errc::no_rdma_device, "ibverbs: " + name + " port " +
                                                              std::to_string(options.port) +
                                                              " is not active (link down?)"));
  }
  dev->active_mtu = pa.active_mtu;
  device_attr& a = dev->attr;
  a.provider = "ibverbs";
  a.name = name;
  a.max_qp_wr = static_cast<std::uint32_t>(da.max_qp_wr);
  a.max_sge = static_cast<std::uint32_t>(da.max_sge);
  a.max_cqe = static_cast<std::uint32_t>(da.max_cqe);
  a.max_mr_size = da.max_mr_size;
  a.max_inline_data = probe_max_inline(dev->ctx);
  a.mtu = mtu_bytes(pa.active_mtu);
  a.lid = pa.lid;
  std::memcpy(a.gid.data(), gid.raw, 16);
  return std::unique_ptr<device>(std::make_unique<ib_device>(std::move(dev)));
}

}  // namespace corvid::verbs::ib
