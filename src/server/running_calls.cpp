#include "running_calls.hpp"

#include <utility>

#include "corvid/server/request_context.hpp"

namespace corvid::detail {

std::size_t running_calls::home(std::uint64_t id) const noexcept {
  // Fibonacci hashing: ids are often sequential (slot | generation << 32); the multiply
  // spreads them over the table's high bits.
  return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> 32) & (slots_.size() - 1);
}

std::size_t running_calls::slot_of(std::uint64_t id) const noexcept {
  std::size_t i = home(id);
  while (slots_[i] != nullptr && slots_[i]->request_id() != id) i = (i + 1) & (slots_.size() - 1);
  return i;
}

bool running_calls::insert(request_context* ctx) noexcept {
  if ((size_ + 1) * 2 > slots_.size()) return false;  // reserve_one() was not called
  const std::size_t i = slot_of(ctx->request_id());
  if (slots_[i] != nullptr) return false;
  slots_[i] = ctx;
  ++size_;
  return true;
}

void running_calls::erase(request_context* ctx) noexcept {
  if (size_ == 0) return;
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = slot_of(ctx->request_id());
  if (slots_[i] != ctx) return;
  slots_[i] = nullptr;
  --size_;
  // Backward shift: move later entries of the probe run into the hole when their home slot
  // does not lie (cyclically) between the hole and them, so lookups never stop early.
  for (std::size_t j = (i + 1) & mask; slots_[j] != nullptr; j = (j + 1) & mask) {
    const std::size_t h = home(slots_[j]->request_id());
    const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
    if (!stays) {
      slots_[i] = std::exchange(slots_[j], nullptr);
      i = j;
    }
  }
}

void running_calls::grow() {
  std::vector<request_context*> old(slots_.empty() ? 16 : slots_.size() * 2, nullptr);
  old.swap(slots_);
  for (request_context* c : old) {
    if (c != nullptr) slots_[slot_of(c->request_id())] = c;
  }
}

}  // namespace corvid::detail
