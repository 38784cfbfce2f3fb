// Stands in for the ibverbs provider when corvid was built without libibverbs.
#include "../providers.hpp"

namespace corvid::verbs::ib {

result<std::unique_ptr<device>> open_device(const device_options&) {
  return unexpected(rpc_error(rpc_errc::no_rdma_device,
                              "ibverbs: corvid was built without libibverbs (install "
                              "libibverbs-dev and rebuild, or use the soft provider)"));
}

}  // namespace corvid::verbs::ib
