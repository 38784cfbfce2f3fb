#include "background.hpp"

namespace corvid::detail {

namespace {
// Touched when background work starts or ends, never per call.
std::atomic<std::size_t> running{0};
}  // namespace

std::size_t background_running() noexcept { return running.load(std::memory_order_acquire); }

background_work::background_work() noexcept { running.fetch_add(1, std::memory_order_relaxed); }

background_work::~background_work() { running.fetch_sub(1, std::memory_order_release); }

}  // namespace corvid::detail
