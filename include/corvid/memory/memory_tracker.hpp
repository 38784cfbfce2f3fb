#pragma once
// Hierarchical memory accounting: every node has a limit, a current
// and a peak, and a charge to a node is a charge to each of its ancestors up to the root.
// try_reserve() fails, leaving every node as it was, when any node on the path would exceed
// its limit; that is how the server decides to stop reading instead of allocating.
//
// Cost: one relaxed atomic per node on the path (a compare-exchange where a limit applies),
// no locks. Callers on hot paths charge in batches (a connection charges capacity changes,
// not bytes per call), so steady-state calls touch no tracker at all.
#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>

#include "corvid/export.hpp"
#include "corvid/memory/memory_limit.hpp"
#include "corvid/memory/memory_usage.hpp"

namespace corvid {

class CORVID_API memory_tracker {
 public:
  // The process-wide root, unlimited until set_limit(); servers and clients hang below it.
  static memory_tracker& process() noexcept;

  // A root when `parent` is null. The parent must outlive the child.
  explicit memory_tracker(std::string name, std::size_t limit = unlimited_memory,
                          memory_tracker* parent = nullptr);
  // Releases whatever is still charged here from the ancestors, then leaves the tree.
  ~memory_tracker();
  memory_tracker(const memory_tracker&) = delete;
  memory_tracker& operator=(const memory_tracker&) = delete;

  // Charges n bytes here and on every ancestor, or nothing when any of them would exceed its
  // limit.
  [[nodiscard]] bool try_reserve(std::size_t n) noexcept;
  // Charges n bytes even past limits: for memory that already exists (an encoded reply).
  void reserve(std::size_t n) noexcept;
  void release(std::size_t n) noexcept;

  std::size_t current() const noexcept { return current_.load(std::memory_order_relaxed); }
  std::size_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
  std::size_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
  void set_limit(std::size_t limit) noexcept { limit_.store(limit, std::memory_order_relaxed); }
  void reset_peak() noexcept { peak_.store(current(), std::memory_order_relaxed); }
  // Whether this node or an ancestor is at or past its limit.
  bool over_limit() const noexcept;
  // Bytes that could still be reserved here: the least headroom on the path to the root.
  std::size_t available() const noexcept;

  const std::string& name() const noexcept { return name_; }
  memory_tracker* parent() const noexcept { return parent_; }
  // This node and its descendants, as they are now.
  memory_usage snapshot() const;

 private:
  void note_peak(std::size_t value) noexcept;

  // Hot fields first, on their own cache line: sibling connections must not share one.
  alignas(64) std::atomic<std::size_t> current_{0};
  std::atomic<std::size_t> peak_{0};
  std::atomic<std::size_t> limit_;
  memory_tracker* const parent_;
  std::string name_;
  // Children, for snapshots; guarded by this node's mutex_.
  mutable std::mutex mutex_;
  memory_tracker* first_child_ = nullptr;
  memory_tracker* next_sibling_ = nullptr;  // guarded by parent_->mutex_
  memory_tracker* prev_sibling_ = nullptr;  // guarded by parent_->mutex_
};

}  // namespace corvid
