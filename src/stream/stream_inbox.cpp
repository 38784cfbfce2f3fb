#include "corvid/detail/stream_inbox.hpp"

#include "corvid/codec/reader.hpp"
#include "corvid/protocol/frame_header.hpp"

namespace corvid::detail {

stream_inbox::pushed stream_inbox::push(std::string_view body, std::coroutine_handle<>& wake) {
  std::lock_guard lk(mutex_);
  if (ended_) return pushed::dropped;  // a late item of a stream the consumer left
  if (buffered_ >= window_) return pushed::over;
  if (bare_strings_) {
    codec::reader r(body);
    std::uint32_t n = 0;
    if (r.read_varint(n) != codec::decode_errc::ok || n != r.remaining()) return pushed::malformed;
    items_.emplace_back(r.rest());
  } else {
    items_.emplace_back(body);
  }
  const std::size_t cost = protocol::stream_item_cost(body.size());
  buffered_ += cost;
  unspent_ -= static_cast<std::int64_t>(cost);
  wake = std::exchange(waiter_, {});
  return pushed::kept;
}

std::coroutine_handle<> stream_inbox::end(rpc_error e, bool discard) noexcept {
  std::size_t dropped = 0;
  std::coroutine_handle<> w;
  {
    std::lock_guard lk(mutex_);
    bool missed = false;
    if (discard && !items_.empty()) {
      items_.clear();
      dropped = std::exchange(buffered_, 0);
      missed = true;
    }
    // The first end says why; but a consumer that misses items never sees a clean end (one
    // ended cleanly, then cancelled before its consumer read everything, says cancelled).
    if (!ended_ || (missed && !error_)) error_ = std::move(e);
    ended_ = true;
    w = std::exchange(waiter_, {});
  }
  if (dropped != 0) on_taken(dropped);
  return w;
}

stream_inbox::pulled stream_inbox::pull(std::string& out, std::coroutine_handle<> h) {
  std::uint32_t grant_now = 0;
  std::size_t cost = 0;
  {
    std::lock_guard lk(mutex_);
    if (items_.empty()) {
      if (ended_) return pulled::ended;
      waiter_ = h;
      return pulled::wait;
    }
    out = std::move(items_.front());
    items_.pop_front();
    cost = item_cost(out);
    buffered_ -= cost;
    taken_ += cost;
    if (!ended_ && items_.empty() && unspent_ <= 0 && window_ < max_window_) {
      // The sender waits for credit and the consumer is about to wait for items: the window
      // is too small to keep both busy. The growth is granted with what was taken.
      const std::size_t extra = reserve_growth(std::min(window_ * 2, max_window_) - window_);
      taken_ += extra;
      window_ += extra;
    }
    // Granted back in quarters of the window: one credit frame per several items, and the
    // sender never waits for a whole window's round trip.
    if (!ended_ && taken_ >= window_ / 4) {
      grant_now = static_cast<std::uint32_t>(std::min<std::size_t>(taken_, UINT32_MAX));
      taken_ -= grant_now;
      unspent_ += grant_now;
    }
  }
  on_taken(cost);
  if (grant_now != 0) grant(grant_now);
  return pulled::item;
}

std::size_t stream_inbox::item_cost(const std::string& item) const noexcept {
  // What the item cost as it arrived: a bare string has lost its length prefix since.
  const std::size_t prefix =
      bare_strings_ ? codec::varint_size(static_cast<std::uint32_t>(item.size())) : 0;
  return protocol::stream_item_cost(item.size() + prefix);
}

std::size_t stream_inbox::window() const {
  std::lock_guard lk(mutex_);
  return window_;
}

bool stream_inbox::ended() const {
  std::lock_guard lk(mutex_);
  return ended_;
}

rpc_error stream_inbox::error() const {
  std::lock_guard lk(mutex_);
  return error_;
}

}  // namespace corvid::detail
