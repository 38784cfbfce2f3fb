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

  // The sender sends items of `size` bytes while it has credit; returns how many it sent.
  int send_while_credit(std::size_t size) {
    int sent = 0;
    const std::string body(size, 'x');
    while (credit > 0) {
      std::coroutine_handle<> wake;
      EXPECT_EQ(push(body, wake), pushed::kept);
      credit -= static_cast<std::int64_t>(corvid::protocol::stream_item_cost(size));
      ++sent;
    }
    return sent;
  }
  // The consumer takes what is buffered.
  int take_all() {
    int taken = 0;
    std::string item;
    while (pull(item, {}) == pulled::item) ++taken;
    return taken;
  }

  void grant(std::uint32_t bytes) noexcept override {
    credit += bytes;
    grants.push_back(bytes);
  }
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
  std::vector<std::uint32_t> grants;
};

// Items four times the window: one is in flight at a time, and each waits for the credit
// its predecessor returns. Each time the consumer empties the inbox while the sender has no
// credit left (its grants included), the window doubles, until two items fit: then the
// grant for the first reaches the sender while the consumer still has the second.
TEST(stream_inbox, the_window_grows_while_a_fast_reader_waits_on_a_sender_out_of_credit) {
  simulated_stream s(256 * kib, 4096 * kib);
  std::vector<int> per_round;
  for (int round = 0; round < 8; ++round) {
    per_round.push_back(s.send_while_credit(1024 * kib));
    s.take_all();
  }
  EXPECT_EQ(s.window(), 2048 * kib);
  EXPECT_EQ(per_round.front(), 1);
  EXPECT_EQ(per_round.back(), 2) << "a grown window lets two items be in flight";
}

// Growth stops at max_window.
TEST(stream_inbox, the_window_grows_no_further_than_its_cap) {
  simulated_stream s(256 * kib, 4096 * kib);
  for (int round = 0; round < 10; ++round) {
    s.send_while_credit(8192 * kib);
    s.take_all();
  }
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
  const std::string body(4 * kib, 'x');
  for (int i = 0; i < 1000; ++i) {
    std::coroutine_handle<> wake;
    ASSERT_EQ(s.push(body, wake), stream_inbox::pushed::kept);
    s.credit -= static_cast<std::int64_t>(corvid::protocol::stream_item_cost(body.size()));
    ASSERT_EQ(s.take_all(), 1);
    ASSERT_GT(s.credit, 0);
  }
  EXPECT_EQ(s.window(), 256 * kib);
}

// max_window at (or below) the window keeps it fixed; growth is what the receiver allows.
TEST(stream_inbox, a_max_window_at_the_window_or_a_receiver_out_of_room_stops_growth) {
  simulated_stream fixed(256 * kib, 0);
  simulated_stream limited(256 * kib, 4096 * kib, 300 * kib);
  for (int round = 0; round < 8; ++round) {
    fixed.send_while_credit(1024 * kib);
    fixed.take_all();
    limited.send_while_credit(1024 * kib);
    limited.take_all();
  }
  EXPECT_EQ(fixed.window(), 256 * kib);
  EXPECT_EQ(limited.window(), 556 * kib);
}

// The grown window is what the inbox enforces: a sender past it is refused, a sender within
// it is not.
TEST(stream_inbox, a_sender_past_the_grown_window_is_refused) {
  simulated_stream s(256 * kib, 1024 * kib);
  for (int round = 0; round < 4; ++round) {
    s.send_while_credit(512 * kib);
    s.take_all();
  }
  ASSERT_EQ(s.window(), 1024 * kib);
  s.send_while_credit(512 * kib);
  std::coroutine_handle<> wake;
  EXPECT_EQ(s.push(std::string(512 * kib, 'y'), wake), stream_inbox::pushed::over);
}

}  // namespace
