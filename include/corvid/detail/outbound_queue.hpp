#pragma once
// Frames waiting to be written. Small data is appended into one contiguous buffer; large
// payloads ride along as their own segment, owned (a moved std::string attachment) or
// borrowed (caller memory that outlives the write), so a gather write sends everything
// queued in one syscall without copying big payloads.
#include <cstddef>
#include <string>
#include <vector>

#include "corvid/detail/byte_buffer.hpp"

namespace corvid::detail {

class outbound_queue {
 public:
  // Codec sink interface: n uninitialised bytes at the end of the queue. Always inlined: a
  // few instructions on every reply, which a large caller would otherwise call.
  [[gnu::always_inline]] char* extend(std::size_t n) {
    char* p = bytes_.extend(n);
    note_bytes(n);
    return p;
  }
  void append(std::string_view s) {
    if (s.empty()) return;
    bytes_.append(s);
    note_bytes(s.size());
  }
  // Queues an owned payload without copying it.
  void append_owned(std::string&& s) {
    if (s.empty()) return;
    total_ += s.size();
    owned_.push_back(std::move(s));
    segments_.push_back({npos, owned_.size() - 1});
  }
  // Queues caller memory without copying it: it must stay valid until the write is done.
  void append_borrowed(std::string_view s) {
    if (s.empty()) return;
    total_ += s.size();
    borrowed_.push_back(s);
    segments_.push_back({borrowed_marker, borrowed_.size() - 1});
  }
  // Offset of the next byte in the contiguous buffer, for patching headers later.
  std::size_t mark() const noexcept { return bytes_.size(); }
  char* at(std::size_t offset) noexcept { return bytes_.data() + offset; }
  // Discards everything after `offset`, which must be a mark() with no owned segment after it.
  void rollback(std::size_t offset) noexcept {
    total_ -= bytes_.size() - offset;
    bytes_.truncate(offset);
    if (!segments_.empty() && segments_.back().first < borrowed_marker) {
      segments_.back().second = offset;
      if (segments_.back().second == segments_.back().first) segments_.pop_back();
    }
  }

  // Drops the first n bytes. Only for queues without owned segments (the client's).
  void erase_front(std::size_t n) noexcept {
    bytes_.consume(n);
    total_ -= n;
    --frames_;
    if (bytes_.empty()) {
      segments_.clear();
    } else {
      segments_.front().second -= n;
    }
  }

  std::size_t size() const noexcept { return total_; }
  bool empty() const noexcept { return total_ == 0; }
  std::size_t frames() const noexcept { return frames_; }
  void count_frame() noexcept { ++frames_; }

  // Fills `iov` with the buffers for one gather write, in queue order; they are valid until
  // the queue changes. `Buffer` is the writer's buffer type (asio::const_buffer), which this
  // header, included by every caller's file, does not pull in.
  template <class Buffer>
  void gather(std::vector<Buffer>& iov) const {
    iov.clear();
    for (const auto& [first, second] : segments_) {
      if (first == npos) {
        iov.emplace_back(owned_[second].data(), owned_[second].size());
      } else if (first == borrowed_marker) {
        iov.emplace_back(borrowed_[second].data(), borrowed_[second].size());
      } else {
        iov.emplace_back(bytes_.data() + first, second - first);
      }
    }
  }
  // Empties the queue, keeping the contiguous buffer's capacity for reuse. A buffer grown
  // past `keep_capacity` goes back to the system once a batch no longer needs it: shrinking
  // after every big batch would reallocate (and page-fault) megabytes per write.
  void clear(std::size_t keep_capacity = 1 << 20) noexcept {
    const bool small_batch = bytes_.size() <= keep_capacity;
    bytes_.clear();
    if (small_batch) bytes_.shrink_to(keep_capacity);
    owned_.clear();
    borrowed_.clear();
    segments_.clear();
    total_ = 0;
    frames_ = 0;
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  static constexpr std::size_t borrowed_marker = npos - 1;
  // Extends the last contiguous segment, or opens one after an owned or borrowed segment.
  void note_bytes(std::size_t n) {
    total_ += n;
    if (segments_.empty() || segments_.back().first >= borrowed_marker) {
      segments_.push_back({bytes_.size() - n, bytes_.size()});
    } else {
      segments_.back().second = bytes_.size();
    }
  }

  byte_buffer bytes_;
  std::vector<std::string> owned_;
  std::vector<std::string_view> borrowed_;
  // {begin, end} offsets into bytes_, {npos, index into owned_} or
  // {borrowed_marker, index into borrowed_}.
  std::vector<std::pair<std::size_t, std::size_t>> segments_;
  std::size_t total_ = 0;
  std::size_t frames_ = 0;
};

}  // namespace corvid::detail
