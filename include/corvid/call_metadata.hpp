#pragma once
// Call metadata: ordered key/value pairs a call carries beside its arguments (a bearer
// token, a tenant id, an idempotency key), and a reply beside its value. Keys are lowercase
// ASCII tokens of 1-255 bytes (a-z 0-9 - _ .); values are bytes. A key may repeat; order is
// kept. On the wire: docs/protocol.md, "Call metadata".
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "corvid/export.hpp"

namespace corvid {

struct metadata_entry {
  std::string_view key;
  std::string_view value;
};

// Whether `key` may name a metadata entry: 1-255 bytes of a-z, 0-9, '-', '_', '.'.
CORVID_API bool is_metadata_key(std::string_view key) noexcept;

// Metadata a caller sends (call_options::metadata) or a handler replies with
// (request_context::response_metadata()). Owns its bytes.
class CORVID_API metadata {
 public:
  metadata() = default;
  // Throws std::invalid_argument on a key that is_metadata_key refuses.
  metadata(std::initializer_list<std::pair<std::string_view, std::string_view>> entries);

  // Appends an entry (keys may repeat). Throws std::invalid_argument on a bad key.
  metadata& add(std::string_view key, std::string_view value);
  // The first entry's value under `key`, if any.
  std::optional<std::string_view> find(std::string_view key) const noexcept;
  // Removes every entry under `key`; how many there were.
  std::size_t erase(std::string_view key) noexcept;
  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }
  void clear() noexcept { entries_.clear(); }
  metadata_entry operator[](std::size_t i) const noexcept {
    return {entries_[i].first, entries_[i].second};
  }
  // The bytes its block takes on the wire (docs/protocol.md): what a server's
  // max_metadata_bytes is compared with.
  std::size_t wire_size() const noexcept;

  class iterator {
   public:
    using value_type = metadata_entry;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(const std::pair<std::string, std::string>* p) noexcept : p_(p) {}
    metadata_entry operator*() const noexcept { return {p_->first, p_->second}; }
    iterator& operator++() noexcept {
      ++p_;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator t = *this;
      ++p_;
      return t;
    }
    bool operator==(const iterator&) const = default;

   private:
    const std::pair<std::string, std::string>* p_ = nullptr;
  };
  iterator begin() const noexcept { return iterator(entries_.data()); }
  iterator end() const noexcept { return iterator(entries_.data() + entries_.size()); }

  friend bool operator==(const metadata&, const metadata&) = default;

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// Metadata as it arrived: views into the request (or reply) it came with, checked when the
// frame was read, never copied. Valid while that request is: for a handler, until it returns
// (a coroutine handler: until it finishes).
class CORVID_API metadata_view {
 public:
  metadata_view() = default;
  // `block` is a checked wire block (docs/protocol.md) or empty.
  explicit metadata_view(std::string_view block, std::size_t count) noexcept
      : block_(block), count_(count) {}

  std::optional<std::string_view> find(std::string_view key) const noexcept;
  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  // Its entries as they are on the wire (docs/protocol.md, "Call metadata"): what a copy of
  // the view needs, and the bytes a quota counts.
  std::string_view wire() const noexcept { return block_; }
  // An owning copy (e.g. to keep past the handler).
  metadata to_metadata() const;

  class iterator {
   public:
    using value_type = metadata_entry;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const char* at, std::size_t left) noexcept : at_(at), left_(left) {}
    metadata_entry operator*() const noexcept;
    iterator& operator++() noexcept;
    iterator operator++(int) noexcept {
      iterator t = *this;
      ++*this;
      return t;
    }
    bool operator==(const iterator& o) const noexcept { return left_ == o.left_; }

   private:
    const char* at_ = nullptr;  // the current entry
    std::size_t left_ = 0;      // entries from here to the end
  };
  iterator begin() const noexcept;
  iterator end() const noexcept { return {}; }

 private:
  std::string_view block_;  // the entries (after the block's 6-byte head)
  std::size_t count_ = 0;
};

}  // namespace corvid
