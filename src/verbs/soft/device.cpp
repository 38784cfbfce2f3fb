// The softverbs device, protection domain and memory regions.
#include <memory>

#include "../providers.hpp"
#include "context.hpp"
#include "cq.hpp"
#include "qp.hpp"

namespace corvid::verbs::soft {
namespace {

class soft_mr final : public memory_region {
 public:
  soft_mr(std::shared_ptr<context> ctx, std::byte* p, std::size_t n, std::uint32_t key)
      : ctx_(std::move(ctx)), addr_(p), length_(n), key_(key) {}
  ~soft_mr() override { ctx_->remove_region(key_); }
  std::uint32_t lkey() const noexcept override { return key_; }
  std::uint32_t rkey() const noexcept override { return key_; }
  std::byte* addr() const noexcept override { return addr_; }
  std::size_t length() const noexcept override { return length_; }

 private:
  std::shared_ptr<context> ctx_;
  std::byte* addr_;
  std::size_t length_;
  std::uint32_t key_;
};

class soft_pd final : public protection_domain {
 public:
  explicit soft_pd(std::shared_ptr<context> ctx) : ctx_(std::move(ctx)) {}

  result<std::unique_ptr<memory_region>> reg_mr(void* p, std::size_t n,
                                                std::uint32_t access) override {
    if (p == nullptr || n == 0 || n > ctx_->attr().max_mr_size) {
      return unexpected(
          rpc_error(rpc_errc::invalid_argument, "softverbs: reg_mr: empty or oversized region"));
    }
    const auto addr = reinterpret_cast<std::uint64_t>(p);
    const std::uint32_t key = ctx_->add_region({addr, n, access});
    return std::unique_ptr<memory_region>(
        std::make_unique<soft_mr>(ctx_, static_cast<std::byte*>(p), n, key));
  }

  result<std::unique_ptr<queue_pair>> create_qp(const qp_init& init) override {
    auto qp = soft_qp::create(ctx_, init);
    if (!qp) return unexpected(std::move(qp).error());
    return std::unique_ptr<queue_pair>(std::move(*qp));
  }

 private:
  std::shared_ptr<context> ctx_;
};

class soft_device final : public device {
 public:
  soft_device() : ctx_(std::make_shared<context>()) {}
  const device_attr& attr() const noexcept override { return ctx_->attr(); }
  result<std::unique_ptr<protection_domain>> alloc_pd() override {
    return std::unique_ptr<protection_domain>(std::make_unique<soft_pd>(ctx_));
  }
  result<std::unique_ptr<completion_queue>> create_cq(std::uint32_t cqe) override {
    auto cq = soft_cq::create(cqe);
    if (!cq) return unexpected(std::move(cq).error());
    return std::unique_ptr<completion_queue>(std::move(*cq));
  }
  std::optional<std::uint64_t> rnr_naks() const noexcept override { return ctx_->rnr_naks(); }

 private:
  std::shared_ptr<context> ctx_;
};

}  // namespace

result<std::unique_ptr<device>> open_device(const device_options& options) {
  if (!options.device_name.empty() && options.device_name != "softverbs0") {
    return unexpected(rpc_error(rpc_errc::no_rdma_device, "softverbs: no device named '" +
                                                              options.device_name +
                                                              "' (softverbs has one: softverbs0)"));
  }
  if (options.port != 1 || options.gid_index != 0) {
    return unexpected(rpc_error(rpc_errc::invalid_argument,
                                "softverbs: softverbs0 has port 1 and gid index 0 only"));
  }
  return std::unique_ptr<device>(std::make_unique<soft_device>());
}

}  // namespace corvid::verbs::soft
