#pragma once
// The receiving end of one stream, shared by both sides: items arrive on the connection's
// reactor (push), the consumer takes them in order from any thread (pull), and what it has
// taken is granted back to the sender as credit. Items are kept as their encoded bodies and
// decoded by the typed stream_reader as they are taken.
#include <algorithm>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

#include "corvid/detail/recycling_allocator.hpp"
#include "corvid/error.hpp"
#include "corvid/export.hpp"

namespace corvid::detail {

class CORVID_API stream_inbox {
 public:
  // `window`: the credit the receiver gives its sender at first, and so what it holds at most
  // (the sender may overshoot by one item). It grows, doubling up to `max_window`, each time
  // the window was what held the stream back: the consumer took the last item buffered while
  // the sender had no credit left, so the consumer will wait a whole round trip (the grant
  // travelling out, the next item back) for nothing: a window smaller than about two items.
  // (Grants still travelling count as the sender's, so a window below a long link's
  // bandwidth-delay product goes unseen.) A consumer that is behind (items still buffered),
  // or a sender that is slow (credit to spare), never grows it. `bare_strings`:
  // the items are strings (the reader's type is std::string), kept without their length
  // prefix so the reader takes them as they are instead of decoding (copying) each again.
  stream_inbox(std::size_t window, std::size_t max_window, bool bare_strings = false) noexcept
      : window_(window),
        max_window_(std::max(window, max_window)),
        unspent_(static_cast<std::int64_t>(window)),
        bare_strings_(bare_strings) {}
  virtual ~stream_inbox() = default;

  // Reactor: an item's payload arrived. `over` (nothing kept) if the sender ignored its
  // credit: more than the window is buffered already; `dropped` if the stream has ended.
  // `wake` (when kept): the consumer waiting for it, to resume once push() returned. Taken in
  // the same critical section as the item is queued, so it is a consumer this item is owed
  // to: one taken later could be a consumer that took this item already and waits for the
  // next, which would wake to an empty inbox.
  // `malformed` (bare_strings): the item is not one encoded string.
  enum class pushed { kept, dropped, over, malformed };
  pushed push(std::string_view body, std::coroutine_handle<>& wake);
  // Reactor (or the side ending it): no more items; `e` falsy for a clean end. Only the
  // first end counts. `discard`: items not taken yet are dropped (the consumer gave up, or
  // its deadline passed: it should learn at once, not after a window of stale items).
  // Returns the consumer to resume, if one waits (resume it last).
  std::coroutine_handle<> end(rpc_error e, bool discard = false) noexcept;

  enum class pulled { item, ended, wait };
  // Consumer: takes the next item into `out`; at the end, `ended`; with nothing there yet,
  // `wait` and `h` is resumed on the reactor when an item or the end arrives.
  pulled pull(std::string& out, std::coroutine_handle<> h);
  bool ended() const;
  bool bare_strings() const noexcept { return bare_strings_; }
  // The credit window now (it only grows).
  std::size_t window() const;
  // Why the stream ended (falsy: a clean end, or not ended yet).
  rpc_error error() const;

  // Sends the sender `bytes` more credit (the consumer took that much). Called without the
  // lock, from the consumer's thread.
  virtual void grant(std::uint32_t bytes) noexcept = 0;
  // The consumer gave up before the end (cancel(), or dropped its reader).
  virtual void abandon() noexcept = 0;
  // Items of `cost` bytes in all left the inbox (taken, or dropped at the end): the server
  // releases the memory it charged for them. Called without the lock.
  virtual void on_taken(std::size_t cost) noexcept { static_cast<void>(cost); }
  // The window would grow by `bytes`: how much of that the receiver can hold (0: it stays).
  // Called with the inbox locked, from the consumer's thread.
  virtual std::size_t reserve_growth(std::size_t bytes) noexcept { return bytes; }
  virtual void retain() noexcept = 0;
  virtual void release() noexcept = 0;

 private:
  std::size_t item_cost(const std::string& item) const noexcept;
  std::size_t window_;
  const std::size_t max_window_;
  std::int64_t unspent_;  // credit the sender has left, as far as what arrived tells
  const bool bare_strings_;
  mutable std::mutex mutex_;
  // On the thread's recycled blocks: a deque takes two blocks as it is made (its map and a
  // first node), which were two heap allocations for every stream call.
  std::deque<std::string, recycling_allocator<std::string>> items_;
  std::size_t buffered_ = 0;  // credit cost of items_
  std::size_t taken_ = 0;     // taken and not yet granted back
  bool ended_ = false;
  rpc_error error_;
  std::coroutine_handle<> waiter_;
};

}  // namespace corvid::detail
