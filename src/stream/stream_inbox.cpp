#include "corvid/detail/stream_inbox.hpp"

#include "corvid/protocol/frame_header.hpp"

namespace corvid::detail {

stream_inbox::pushed stream_inbox::push(std::string_view body, std::coroutine_handle<>& wake) {
  std::lock_guard lk(mutex_);
  if (ended_) return pushed::dropped;  // a late item of a stream the consumer left
  if (buffered_ >= window_) return pushed::over;
  items_.emplace_back(body);
  buffered_ += protocol::stream_item_cost(body.size());
  wake = std::exchange(waiter_, {});
  return pushed::kept;
}

std::coroutine_handle<> stream_inbox::end(rpc_error e, bool discard) noexcept {
  std::size_t dropped = 0;
  std::coroutine_handle<> w;
  {
    std::lock_guard lk(mutex_);
    if (!ended_) {
      ended_ = true;
      error_ = std::move(e);
    }
    if (discard) {
      items_.clear();
      dropped = std::exchange(buffered_, 0);
    }
    w = std::exchange(waiter_, {});
  }
  if (dropped != 0) on_taken(dropped);
  return w;
}

stream_inbox::pulled stream_inbox::pull(std::string& out, std::coroutine_handle<> h) {
  std::uint32_t grant_now = 0;
  {
    std::lock_guard lk(mutex_);
    if (items_.empty()) {
      if (ended_) return pulled::ended;
      waiter_ = h;
      return pulled::wait;
    }
    out = std::move(items_.front());
    items_.pop_front();
    const std::size_t cost = protocol::stream_item_cost(out.size());
    buffered_ -= cost;
    taken_ += cost;
    // Granted back in quarters of the window: one credit frame per several items, and the
    // sender never waits for a whole window's round trip.
    if (!ended_ && taken_ >= window_ / 4)
      grant_now = static_cast<std::uint32_t>(std::exchange(taken_, 0));
  }
  on_taken(protocol::stream_item_cost(out.size()));
  if (grant_now != 0) grant(grant_now);
  return pulled::item;
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
