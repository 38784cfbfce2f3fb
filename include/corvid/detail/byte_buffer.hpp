#pragma once
// A growable byte buffer with a read cursor: the one buffer type the codec writes into and
// connections read from. Unlike std::vector it never value-initialises what it grows into,
// and consume() is O(1) until compact() moves the unread tail to the front.
#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>
#include <utility>

#include "corvid/detail/buffer_memory.hpp"
#include "corvid/memory/buffer_pool.hpp"

namespace corvid::detail {

class byte_buffer {
 public:
  byte_buffer() = default;
  explicit byte_buffer(std::size_t capacity) { reserve(capacity); }
  byte_buffer(const byte_buffer&) = delete;
  byte_buffer& operator=(const byte_buffer&) = delete;
  byte_buffer(byte_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        begin_(std::exchange(o.begin_, 0)),
        end_(std::exchange(o.end_, 0)),
        capacity_(std::exchange(o.capacity_, 0)),
        pooled_(o.pooled_) {}
  byte_buffer& operator=(byte_buffer&& o) noexcept {
    if (this != &o) {
      buffer_free(data_, capacity_);
      data_ = std::exchange(o.data_, nullptr);
      begin_ = std::exchange(o.begin_, 0);
      end_ = std::exchange(o.end_, 0);
      capacity_ = std::exchange(o.capacity_, 0);
      pooled_ = o.pooled_;
    }
    return *this;
  }
  ~byte_buffer() { buffer_free(data_, capacity_); }

  // Unread bytes.
  const char* data() const noexcept { return data_ + begin_; }
  char* data() noexcept { return data_ + begin_; }
  std::size_t size() const noexcept { return end_ - begin_; }
  bool empty() const noexcept { return begin_ == end_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::string_view view() const noexcept { return {data(), size()}; }

  // Free space after the unread bytes; write into it, then commit().
  char* tail() noexcept { return data_ + end_; }
  std::size_t tail_room() const noexcept { return capacity_ - end_; }
  void commit(std::size_t n) noexcept {
    assert(n <= tail_room());
    end_ += n;
  }

  // Appends n uninitialised bytes and returns where they start (the codec's sink interface).
  // Inlined everywhere: it is on every reply's path (callgrind: out of line it cost 27
  // instructions a call).
  [[gnu::always_inline]] char* extend(std::size_t n) {
    if (tail_room() < n) [[unlikely]]
      grow(n);
    char* p = data_ + end_;
    end_ += n;
    return p;
  }
  void append(const void* p, std::size_t n) {
    if (n != 0) std::memcpy(extend(n), p, n);
  }
  void append(std::string_view s) { append(s.data(), s.size()); }

  // Marks n unread bytes as read.
  void consume(std::size_t n) noexcept {
    assert(n <= size());
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  void clear() noexcept { begin_ = end_ = 0; }
  // Drops bytes past new_size (new_size <= size()).
  void truncate(std::size_t new_size) noexcept { end_ = begin_ + new_size; }

  // Moves unread bytes to the front so the tail is as large as possible.
  void compact() noexcept {
    if (begin_ == 0) return;
    std::memmove(data_, data_ + begin_, size());
    end_ -= begin_;
    begin_ = 0;
  }
  // Ensures at least n bytes of tail room (compacting or growing).
  void ensure_tail(std::size_t n) {
    if (tail_room() >= n) return;
    if (capacity_ - size() >= n && begin_ != 0) {
      compact();
      return;
    }
    grow(n);
  }
  // Prepares for a read: capacity at least `capacity_target`, and at least `min_tail` bytes of
  // tail room, compacting rather than growing when the unread bytes leave enough space.
  void prepare_read(std::size_t capacity_target, std::size_t min_tail) {
    reserve(capacity_target);
    if (tail_room() < capacity_ / 2 && begin_ != 0) compact();
    ensure_tail(min_tail);
  }
  void reserve(std::size_t cap) {
    if (cap > capacity_) reallocate(cap);
  }
  // Hands the storage (see buffer_memory.hpp) to the caller, e.g. back to a buffer_pool; the
  // buffer is left empty with no capacity. Unread bytes are dropped.
  std::pair<char*, std::size_t> release_storage() noexcept {
    begin_ = end_ = 0;
    return {std::exchange(data_, nullptr), std::exchange(capacity_, 0)};
  }
  // Takes over storage of `capacity` bytes from buffer_allocate (a buffer_pool block) in
  // place of its own, which must be empty.
  void adopt_storage(char* p, std::size_t capacity) noexcept {
    buffer_free(data_, capacity_);
    data_ = p;
    capacity_ = capacity;
    begin_ = end_ = 0;
  }
  // From now on, storage within buffer_pool's classes comes from and goes back to the calling
  // thread's pool when the buffer grows or shrinks: a connection's read buffer, used only on
  // its reactor, then shares blocks with the reactor's other connections instead of asking
  // malloc each time a big frame passes. Storage above the classes stays a one-off (mapped,
  // and unmapped when the buffer shrinks).
  void draw_from_thread_pool() noexcept { pooled_ = true; }

  // Returns memory (to the system, or to the pool), keeping at most `keep` bytes of capacity.
  void shrink_to(std::size_t keep) {
    if (capacity_ <= keep || size() > keep) return;
    compact();
    reallocate(keep);
  }

 private:
  void grow(std::size_t n) {
    compact();
    // Double for steady appends, but size a big one-off (a large frame) exactly.
    std::size_t want = capacity_ ? capacity_ * 2 : 256;
    if (want < end_ + n) want = end_ + n;
    reallocate(want);
  }
  void reallocate(std::size_t cap) {
    compact();
    if (pooled_ && std::min(cap, capacity_) <= buffer_pool::largest_class) {
      pooled_reallocate(cap);
      return;
    }
    data_ = buffer_reallocate(data_, capacity_, end_, cap);
    capacity_ = cap;
  }
  void pooled_reallocate(std::size_t cap) {
    buffer_pool& pool = buffer_pool::for_this_thread();
    if (cap == 0) {  // shrink_to(0): nothing to keep
      if (data_ != nullptr) pool.release({data_, capacity_});
      data_ = nullptr;
      capacity_ = 0;
      return;
    }
    const buffer_pool::block b = cap <= buffer_pool::largest_class
                                     ? pool.acquire(cap)
                                     : buffer_pool::block{buffer_allocate(cap), cap};
    if (end_ != 0) std::memcpy(b.data, data_, end_ < b.capacity ? end_ : b.capacity);
    if (data_ != nullptr) pool.release({data_, capacity_});  // cached, or freed if above
    data_ = b.data;
    capacity_ = b.capacity;
  }

  char* data_ = nullptr;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::size_t capacity_ = 0;
  bool pooled_ = false;
};

}  // namespace corvid::detail
