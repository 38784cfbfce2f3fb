// stream_inbox's credit: granted back as the consumer takes items, and the window growing
// only when it is what holds the stream back.
#include "corvid/detail/stream_inbox.hpp"

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "corvid/protocol/frame_header.hpp"

namespace {

using corvid::detail::stream_inbox;
constexpr std::size_t kib = 1024;

// An inbox whose sender is simulated: it spends the credit it was granted, as a real one
// would (sending while its credit is above zero, so it overshoots by at most one item).
class simulated_stream final : public stream_inbox {
 public:
  simulated_stream(std::size_t window, std::size_t max_window, std::size_t growth_allowed = ~0u)
      : stream_inbox(window, max_window),
        credit(static_cast<std::int64_t>(window)),
        allowed(growth_allowed) {}

  // The sender sends one item of `size` bytes, spending its credit.
  void send_one(std::size_t size) {
    std::coroutine_handle<> wake;
    EXPECT_EQ(push(std::string(size, 'x'), wake), pushed::kept);
    credit -= static_cast<std::int64_t>(corvid::protocol::stream_item_cost(size));
  }
  // The sender sends items of `size` bytes while it has credit; returns how many it sent.
  int send_while_credit(std::size_t size) {
    int sent = 0;
    for (; credit > 0; ++sent) send_one(size);
    return sent;
  }
  // The consumer takes what is buffered.
  int take_all() {
    int taken = 0;
    std::string item;
    while (pull(item, {}) == pulled::item) ++taken;
    return taken;
  }
  // `n` rounds of the sender spending its credit on items of `size` bytes, then the consumer
  // taking them all; returns how many items each round sent.
  std::vector<int> rounds(int n, std::size_t size) {
    std::vector<int> sent;
    for (int round = 0; round < n; ++round) {
      sent.push_back(send_while_credit(size));
      take_all();
    }
    return sent;
  }

  void grant(std::uint32_t bytes) noexcept override { credit += bytes; }
  void abandon() noexcept override {}
  std::size_t reserve_growth(std::size_t bytes) noexcept override {
    const std::size_t take = bytes < allowed ? bytes : allowed;
    allowed -= take;
    return take;
  }
  void retain() noexcept override {}
  void release() noexcept override {}

  std::int64_t credit;
  std::size_t allowed;
};

// Items four times the window: one is in flight at a time, and each waits for the credit
// its predecessor returns. Each time the consumer empties the inbox while the sender has no
// credit left (its grants included), the window doubles, until two items fit: then the
// grant for the first reaches the sender while the consumer still has the second.
TEST(stream_inbox, the_window_grows_while_a_fast_reader_waits_on_a_sender_out_of_credit) {
  simulated_stream s(256 * kib, 4096 * kib);
  const std::vector<int> per_round = s.rounds(8, 1024 * kib);
  EXPECT_EQ(s.window(), 2048 * kib);
  EXPECT_EQ(per_round.front(), 1);
  EXPECT_EQ(per_round.back(), 2) << "a grown window lets two items be in flight";
}

// Growth stops at max_window.
TEST(stream_inbox, the_window_grows_no_further_than_its_cap) {
  simulated_stream s(256 * kib, 4096 * kib);
  s.rounds(10, 8192 * kib);
  EXPECT_EQ(s.window(), 4096 * kib);
}

// A reader that is behind (items still buffered when it takes one) does not grow the
// window: the sender waiting for credit is the backpressure working.
TEST(stream_inbox, a_reader_that_is_behind_keeps_the_window) {
  simulated_stream s(256 * kib, 4096 * kib);
  for (int round = 0; round < 50; ++round) {
    s.send_while_credit(4 * kib);
    std::string item;
    for (int k = 0; k < 8; ++k) ASSERT_EQ(s.pull(item, {}), stream_inbox::pulled::item);
  }
  EXPECT_EQ(s.window(), 256 * kib);
}

// A sender that still has credit when the reader catches up is slow, not held back by the
// window: it stays.
TEST(stream_inbox, a_slow_sender_keeps_the_window) {
  simulated_stream s(256 * kib, 4096 * kib);
  for (int i = 0; i < 1000; ++i) {
    s.send_one(4 * kib);
    ASSERT_EQ(s.take_all(), 1);
    ASSERT_GT(s.credit, 0);
  }
  EXPECT_EQ(s.window(), 256 * kib);
}

// max_window at (or below) the window keeps it fixed; growth is what the receiver allows.
TEST(stream_inbox, a_max_window_at_the_window_or_a_receiver_out_of_room_stops_growth) {
  simulated_stream fixed(256 * kib, 0);
  simulated_stream limited(256 * kib, 4096 * kib, 300 * kib);
  fixed.rounds(8, 1024 * kib);
  limited.rounds(8, 1024 * kib);
  EXPECT_EQ(fixed.window(), 256 * kib);
  EXPECT_EQ(limited.window(), 556 * kib);
}

// The grown window is what the inbox enforces: a sender past it is refused, a sender within
// it is not.
TEST(stream_inbox, a_sender_past_the_grown_window_is_refused) {
  simulated_stream s(256 * kib, 1024 * kib);
  s.rounds(4, 512 * kib);
  ASSERT_EQ(s.window(), 1024 * kib);
  s.send_while_credit(512 * kib);
  std::coroutine_handle<> wake;
  EXPECT_EQ(s.push(std::string(512 * kib, 'y'), wake), stream_inbox::pushed::over);
}

}  // namespace
