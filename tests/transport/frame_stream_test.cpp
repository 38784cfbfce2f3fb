// The frame stream's batch loop with a recording role: complete frames reach the role in
// order, a partial frame ends the batch, a bad header or a type the role does not accept
// fails it, and the role's verdicts (next, last, hold, fail) decide what is consumed. Also the
// buffer's shrink after a batch and the heartbeat clock's arithmetic.
#include "transport/frame_stream.hpp"

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

using corvid::detail::frame_stream;
using corvid::detail::frame_verdict;
using corvid::detail::heartbeat_clock;
using corvid::protocol::frame_header;
using corvid::protocol::header_errc;
using corvid::protocol::msg_type;
using namespace std::chrono_literals;

std::string frame(msg_type type, std::uint64_t id, std::string_view body) {
  frame_header h;
  h.type = type;
  h.request_id = id;
  h.body_length = static_cast<std::uint32_t>(body.size());
  std::string out(corvid::protocol::header_size, '\0');
  corvid::protocol::encode_header(h, out.data());
  return out + std::string(body);
}

struct recording_role {
  std::uint32_t limit = 1024;
  std::vector<std::pair<std::uint64_t, std::string>> frames;
  std::vector<std::uint64_t> partial;
  std::vector<header_errc> bad;
  // The verdict for each request id (next when absent).
  std::vector<std::pair<std::uint64_t, frame_verdict>> verdicts;

  std::uint32_t max_frame_size() const noexcept { return limit; }
  static bool accepts(msg_type t) noexcept { return t != msg_type::response; }
  void on_bad_frame(const frame_header&, header_errc e) { bad.push_back(e); }
  void on_partial_frame(const frame_header& h) { partial.push_back(h.request_id); }
  frame_verdict on_frame(const frame_header& h, const char* payload) {
    frames.emplace_back(h.request_id, std::string(payload, h.body_length));
    for (auto [id, v] : verdicts) {
      if (id == h.request_id) return v;
    }
    return frame_verdict::next;
  }
};
static_assert(corvid::detail::frame_role<recording_role>);

void feed(frame_stream& fs, std::string_view bytes) {
  corvid::detail::stats_counters stats;
  fs.prepare_read(bytes.size());
  ASSERT_GE(fs.read_buffer().tail_room(), bytes.size());
  std::memcpy(fs.read_buffer().tail(), bytes.data(), bytes.size());
  // commit_read counts what the room offered; feed() offers exactly what it writes.
  fs.commit_read(bytes.size(), stats, std::chrono::steady_clock::now());
  EXPECT_EQ(stats.snapshot().bytes_received, bytes.size());
}

TEST(frame_stream, complete_frames_reach_the_role_in_order_and_a_partial_one_waits) {
  frame_stream fs(8192);
  const std::string third = frame(msg_type::request, 3, "ccc");
  feed(fs, frame(msg_type::request, 1, "a") + frame(msg_type::ping, 2, "") + third.substr(0, 34));
  recording_role role;
  EXPECT_TRUE(fs.process(role));
  ASSERT_EQ(role.frames.size(), 2u);
  EXPECT_EQ(role.frames[0], std::make_pair(std::uint64_t{1}, std::string("a")));
  EXPECT_EQ(role.frames[1].first, 2u);
  EXPECT_EQ(role.partial, std::vector<std::uint64_t>{3});
  EXPECT_EQ(fs.read_buffer().size(), 34u);  // the partial frame stays
  feed(fs, third.substr(34));
  role.partial.clear();
  EXPECT_TRUE(fs.process(role));
  ASSERT_EQ(role.frames.size(), 3u);
  EXPECT_EQ(role.frames[2].second, "ccc");
  EXPECT_TRUE(role.partial.empty());
  EXPECT_TRUE(fs.read_buffer().empty());
}

// A batch that ends mid-frame (or mid-header) tells the reactor loop, which then sleeps for
// the rest instead of polling for it; one that ends on a frame boundary does not.
TEST(frame_stream, a_batch_ending_mid_frame_notes_it_for_the_reactor) {
  using corvid::detail::partial_frame_seen;
  const std::string f = frame(msg_type::request, 1, "abcdef");
  recording_role role;
  for (std::size_t cut : {std::size_t{4}, f.size() - 2}) {  // in the header, in the body
    frame_stream fs(8192);
    partial_frame_seen = false;
    feed(fs, f.substr(0, cut));
    EXPECT_TRUE(fs.process(role));
    EXPECT_TRUE(partial_frame_seen) << "cut at " << cut;
  }
  frame_stream fs(8192);
  partial_frame_seen = false;
  feed(fs, f + f);
  EXPECT_TRUE(fs.process(role));
  EXPECT_FALSE(partial_frame_seen) << "whole frames only";
}

TEST(frame_stream, a_header_past_the_limit_or_of_a_refused_type_fails_the_batch) {
  {
    frame_stream fs(8192);
    feed(fs, frame(msg_type::request, 1, std::string(100, 'x')));
    recording_role role;
    role.limit = 99;
    EXPECT_FALSE(fs.process(role));
    EXPECT_EQ(role.bad, std::vector<header_errc>{header_errc::too_large});
    EXPECT_TRUE(role.frames.empty());
  }
  {
    frame_stream fs(8192);
    feed(fs, frame(msg_type::request, 1, "") + frame(msg_type::response, 2, ""));
    recording_role role;
    EXPECT_FALSE(fs.process(role));
    EXPECT_EQ(role.frames.size(), 1u);  // those before it were taken
    EXPECT_EQ(role.bad, std::vector<header_errc>{header_errc::ok});
  }
  {
    frame_stream fs(8192);
    std::string garbage(corvid::protocol::header_size, '\xff');
    feed(fs, garbage);
    recording_role role;
    EXPECT_FALSE(fs.process(role));
    ASSERT_EQ(role.bad.size(), 1u);
    EXPECT_NE(role.bad[0], header_errc::ok);
  }
}

// Three one-byte requests (ids 1, 2, 3) in the buffer; the role answers `v` for id `id`.
struct verdict_case {
  frame_stream fs{8192};
  recording_role role;
  verdict_case(std::uint64_t id, frame_verdict v) {
    feed(fs, frame(msg_type::request, 1, "a") + frame(msg_type::request, 2, "b") +
                 frame(msg_type::request, 3, "c"));
    role.verdicts = {{id, v}};
  }
};
constexpr std::size_t one_frame = corvid::protocol::header_size + 1;

TEST(frame_stream, verdicts_decide_what_is_consumed_and_whether_the_batch_goes_on) {
  {  // hold: the frame stays, the batch ends, and it comes again next time
    verdict_case c(2, frame_verdict::hold);
    EXPECT_TRUE(c.fs.process(c.role));
    EXPECT_EQ(c.role.frames.size(), 2u);
    EXPECT_EQ(c.fs.read_buffer().size(), 2 * one_frame);
    c.role.verdicts.clear();
    EXPECT_TRUE(c.fs.process(c.role));
    ASSERT_EQ(c.role.frames.size(), 4u);
    EXPECT_EQ(c.role.frames[2].first, 2u);
  }
  {  // last: taken, then the batch ends
    verdict_case c(2, frame_verdict::last);
    EXPECT_TRUE(c.fs.process(c.role));
    EXPECT_EQ(c.role.frames.size(), 2u);
    EXPECT_EQ(c.fs.read_buffer().size(), one_frame);
  }
  {  // fail: the stream cannot go on
    verdict_case c(1, frame_verdict::fail);
    EXPECT_FALSE(c.fs.process(c.role));
    EXPECT_EQ(c.role.frames.size(), 1u);
  }
}

TEST(frame_stream, a_buffer_grown_for_a_big_frame_shrinks_once_a_batch_holds_none) {
  frame_stream fs(4096);
  const std::size_t big = corvid::detail::read_room::max + 1000;
  const std::string f = frame(msg_type::request, 1, std::string(big, 'x'));
  recording_role role;
  role.limit = static_cast<std::uint32_t>(2 * big);
  feed(fs, f);
  EXPECT_TRUE(fs.process(role));
  const std::size_t grown = fs.read_buffer().capacity();
  EXPECT_GE(grown, f.size());
  fs.end_batch(4096, false);  // big frames keep coming: the buffer stays
  EXPECT_EQ(fs.read_buffer().capacity(), grown);
  feed(fs, frame(msg_type::request, 2, "small"));
  EXPECT_TRUE(fs.process(role));
  fs.end_batch(4096, false);  // a batch of small frames: back to read_room::max
  EXPECT_EQ(fs.read_buffer().capacity(), corvid::detail::read_room::max);
  fs.end_batch(4096, true);  // someone waits for memory: down to the idle size
  EXPECT_EQ(fs.read_buffer().capacity(), 4096u);
}

TEST(frame_stream, reads_end_at_big_frames_ends_so_none_is_begun_where_it_cannot_finish) {
  frame_stream fs(256 * 1024);
  recording_role role;
  role.limit = 1 << 20;
  const std::string big = frame(msg_type::request, 1, std::string(40000, 'x'));
  const std::size_t size = big.size();
  feed(fs, big);
  ASSERT_TRUE(fs.process(role));
  ASSERT_TRUE(fs.read_buffer().empty());
  // No header in: the last frame's size stands for the next ones'. As many whole frames as
  // fit, so the next read ends where a frame ends.
  std::size_t room = fs.read_buffer().tail_room();
  std::size_t offer = fs.read_offer();
  EXPECT_EQ(offer % size, 0u);
  EXPECT_LE(offer, room);
  EXPECT_GT(offer + size, room);

  // A big frame partly in: the rest of it, then whole frames of its size.
  feed(fs, big.substr(0, 1000));
  ASSERT_TRUE(fs.process(role));
  ASSERT_EQ(role.partial.size(), 1u);
  room = fs.read_buffer().tail_room();
  offer = fs.read_offer();
  const std::size_t rest = size - 1000;
  EXPECT_EQ(offer, rest + (room - rest) / size * size);
  // A read that fills the offer leaves no frame begun: every frame in it is taken whole.
  std::string bytes = big.substr(1000);
  while (bytes.size() + size <= offer) bytes += big;
  ASSERT_EQ(bytes.size(), offer);
  std::memcpy(fs.read_buffer().tail(), bytes.data(), bytes.size());
  corvid::detail::stats_counters stats;
  fs.commit_read(bytes.size(), stats, std::chrono::steady_clock::now());
  ASSERT_TRUE(fs.process(role));
  EXPECT_TRUE(fs.read_buffer().empty());
  EXPECT_EQ(role.frames.size(), 1 + offer / size + 1);

  // After small frames, a read takes all the room: many small frames per read.
  feed(fs, frame(msg_type::request, 2, "small"));
  ASSERT_TRUE(fs.process(role));
  EXPECT_EQ(fs.read_offer(), fs.read_buffer().tail_room());
}

TEST(heartbeat_clock, pings_follow_the_later_of_hearing_and_pinging_and_zero_disables) {
  heartbeat_clock c;
  const auto t0 = std::chrono::steady_clock::now();
  c.restart(t0);
  EXPECT_EQ(c.ping_due(100ms), t0 + 100ms);
  EXPECT_EQ(c.dead_at(300ms), t0 + 300ms);
  EXPECT_EQ(c.next_check(100ms, 300ms), t0 + 100ms);
  EXPECT_EQ(c.ping_due(0ms), heartbeat_clock::time_point::max());
  EXPECT_EQ(c.next_check(0ms, 0ms), heartbeat_clock::time_point::max());
  EXPECT_FALSE(c.take_ping(t0 + 99ms, 100ms));
  EXPECT_TRUE(c.take_ping(t0 + 100ms, 100ms));
  EXPECT_EQ(c.ping_due(100ms), t0 + 200ms);  // counted from the ping, not from hearing
  EXPECT_FALSE(c.silent(t0 + 299ms, 300ms));
  EXPECT_TRUE(c.silent(t0 + 300ms, 300ms));
  EXPECT_FALSE(c.silent(t0 + 1h, 0ms));
  c.last_heard = t0 + 250ms;  // a late sign of life moves both
  EXPECT_EQ(c.ping_due(100ms), t0 + 350ms);
  EXPECT_EQ(c.dead_at(300ms), t0 + 550ms);
}

}  // namespace
