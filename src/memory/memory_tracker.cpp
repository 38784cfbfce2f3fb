#include "corvid/memory/memory_tracker.hpp"

#include <algorithm>

namespace corvid {

memory_tracker& memory_tracker::process() noexcept {
  // Never destroyed: trackers of static objects may outlive any static root.
  static memory_tracker* const root = new memory_tracker("process");
  return *root;
}

memory_tracker::memory_tracker(std::string name, std::size_t limit, memory_tracker* parent)
    : limit_(limit), parent_(parent), name_(std::move(name)) {
  if (parent_ == nullptr) return;
  std::lock_guard lk(parent_->mutex_);
  next_sibling_ = parent_->first_child_;
  if (next_sibling_ != nullptr) next_sibling_->prev_sibling_ = this;
  parent_->first_child_ = this;
}

memory_tracker::~memory_tracker() {
  if (parent_ == nullptr) return;
  // Whatever is still charged here (a buffer freed without a release) leaves the ancestors.
  const std::size_t left = current();
  for (memory_tracker* t = parent_; t != nullptr; t = t->parent_) {
    t->current_.fetch_sub(left, std::memory_order_relaxed);
  }
  std::lock_guard lk(parent_->mutex_);
  (prev_sibling_ ? prev_sibling_->next_sibling_ : parent_->first_child_) = next_sibling_;
  if (next_sibling_ != nullptr) next_sibling_->prev_sibling_ = prev_sibling_;
}

bool memory_tracker::try_reserve(std::size_t n) noexcept {
  if (n == 0) return true;
  for (memory_tracker* t = this; t != nullptr; t = t->parent_) {
    const std::size_t limit = t->limit();
    if (limit == unlimited_memory) {
      t->current_.fetch_add(n, std::memory_order_relaxed);
      continue;
    }
    std::size_t cur = t->current_.load(std::memory_order_relaxed);
    do {
      if (n > limit || cur > limit - n) {
        // Undo the nodes below t: they were charged by this call alone.
        for (memory_tracker* u = this; u != t; u = u->parent_) {
          u->current_.fetch_sub(n, std::memory_order_relaxed);
        }
        return false;
      }
    } while (!t->current_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  }
  // Peaks only once the whole path succeeded: a failed reservation leaves no trace.
  for (memory_tracker* t = this; t != nullptr; t = t->parent_) t->note_peak(t->current());
  return true;
}

void memory_tracker::reserve(std::size_t n) noexcept {
  if (n == 0) return;
  for (memory_tracker* t = this; t != nullptr; t = t->parent_) {
    t->note_peak(t->current_.fetch_add(n, std::memory_order_relaxed) + n);
  }
}

void memory_tracker::release(std::size_t n) noexcept {
  if (n == 0) return;
  for (memory_tracker* t = this; t != nullptr; t = t->parent_) {
    t->current_.fetch_sub(n, std::memory_order_relaxed);
  }
}

void memory_tracker::note_peak(std::size_t value) noexcept {
  std::size_t p = peak_.load(std::memory_order_relaxed);
  while (value > p && !peak_.compare_exchange_weak(p, value, std::memory_order_relaxed)) {
  }
}

bool memory_tracker::over_limit() const noexcept {
  for (const memory_tracker* t = this; t != nullptr; t = t->parent_) {
    if (t->current() >= t->limit()) return true;
  }
  return false;
}

std::size_t memory_tracker::available() const noexcept {
  std::size_t room = unlimited_memory;
  for (const memory_tracker* t = this; t != nullptr; t = t->parent_) {
    const std::size_t cur = t->current();
    const std::size_t lim = t->limit();
    room = std::min(room, cur >= lim ? 0 : lim - cur);
  }
  return room;
}

memory_usage memory_tracker::snapshot() const {
  memory_usage u;
  u.name = name_;
  u.current = current();
  u.peak = peak();
  u.limit = limit();
  std::lock_guard lk(mutex_);
  for (const memory_tracker* c = first_child_; c != nullptr; c = c->next_sibling_) {
    u.children.push_back(c->snapshot());
  }
  std::reverse(u.children.begin(), u.children.end());  // the list is newest first
  return u;
}

}  // namespace corvid
