#pragma once
// The providers behind open_device (verbs.cpp dispatches by name).
#include "verbs.hpp"

namespace corvid::verbs {

namespace soft {
result<std::unique_ptr<device>> open_device(const device_options& options);
}  // namespace soft

namespace ib {
// Always defined: without libibverbs at build time it returns no_rdma_device.
result<std::unique_ptr<device>> open_device(const device_options& options);
}  // namespace ib

}  // namespace corvid::verbs
