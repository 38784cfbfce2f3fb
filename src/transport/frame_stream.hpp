#pragma once
// The part of a connection that client and server share, on top of its byte_stream: the
// read buffer and its room, the batch loop that cuts it into frames, the single-flight write
// of a batch of queued frames with its accounting, control frames, and the heartbeat clock.
//
// What differs between the roles is theirs, behind an explicit interface: the batch loop asks
// its role (a frame_role) what each frame means and what to do when one is bad or has not
// fully arrived; a role's own logic (client: calls, caps, parking, deadlines; server:
// admission, dispatch, running calls, drain) never lives here. Everything runs on the
// connection's reactor thread.
#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "corvid/detail/byte_buffer.hpp"
#include "corvid/detail/outbound_queue.hpp"
#include "corvid/protocol/frame_header.hpp"

#include "../protocol/frames.hpp"
#include "../runtime/partial_frame_hint.hpp"
#include "../runtime/stats_counters.hpp"
#include "byte_stream.hpp"
#include "heartbeat_clock.hpp"
#include "read_room.hpp"

namespace corvid::detail {

// A role's verdict on one complete frame of a batch.
enum class frame_verdict : std::uint8_t {
  next,  // taken: go on with the batch
  last,  // taken, and the batch ends after it (nothing more is read this way)
  hold,  // not taken: it stays in the buffer and the batch ends (paused by a limit)
  fail,  // not taken: the stream cannot go on (the role has failed the connection)
};

// What a frame stream asks of its role.
template <class R>
concept frame_role =
    requires(R& r, const protocol::frame_header& h, const char* payload, protocol::header_errc e) {
      // The largest payload accepted: a header claiming more is a bad frame.
      { r.max_frame_size() } -> std::convertible_to<std::uint32_t>;
      // Whether this side accepts frames of the type (a client takes replies, a server requests).
      { r.accepts(h.type) } -> std::same_as<bool>;
      // A header that does not decode (`e`), is too large, or of a type not accepted: the role
      // fails the connection; the batch ends.
      { r.on_bad_frame(h, e) } -> std::same_as<void>;
      // The frame has begun to arrive: make room for the rest (or decide not to). The batch
      // ends either way.
      { r.on_partial_frame(h) } -> std::same_as<void>;
      // A complete frame: header and payload (body then attachment).
      { r.on_frame(h, payload) } -> std::same_as<frame_verdict>;
    };

// Why a header is refused, for the error the role reports; `what` names the frame ("reply",
// "frame") and `limit_name` the limit it passed.
std::string describe_bad_header(protocol::header_errc e, const protocol::frame_header& h,
                                std::uint32_t limit, std::string_view what,
                                std::string_view limit_name, std::string_view expected);

// A frame that is a header alone (cancel, ping, pong, stream_end, stream_credit; built by
// protocol/frames.hpp), queued. Not counted as an RPC frame: stats count RPC frames, and a
// write of control frames alone is no sign of the peer's life.
inline void append_header_frame(outbound_queue& q, const protocol::frame_header& h) {
  protocol::encode_header(h, q.extend(protocol::header_size));
}

class frame_stream {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  frame_stream() = default;  // the owner gives the read buffer its storage
  explicit frame_stream(std::size_t read_buffer) : read_buf_(read_buffer) {}

  // ---- reading ----
  byte_buffer& read_buffer() noexcept { return read_buf_; }
  const byte_buffer& read_buffer() const noexcept { return read_buf_; }
  read_room& room() noexcept { return room_; }
  // Room for the next read: read_room's size, at least `min_room` free.
  void prepare_read(std::size_t min_room) { read_buf_.prepare_read(room_.get(), min_room); }
  template <class Handler>
  void read(byte_stream& stream, asio::cancellation_signal* cancel, Handler&& done) {
    stream.async_read_some(read_buf_.tail(), read_offer(), cancel, std::forward<Handler>(done));
  }
  // `n` bytes were read into the room prepare_read() offered.
  void commit_read(std::size_t n, stats_counters& stats, time_point now) noexcept {
    room_.after_read(n, offered_);
    read_buf_.commit(n);
    stats.on_read(n);
    clock.last_heard = now;
  }

  // Runs `role` over every complete frame in the buffer, in order, until one is partial or
  // the role stops the batch. False when the stream cannot go on (a bad frame, or `fail`).
  template <frame_role R>
  bool process(R& role) {
    while (read_buf_.size() >= protocol::header_size) {
      protocol::frame_header h;
      const auto herr = protocol::decode_header(read_buf_.data(), h, role.max_frame_size());
      if (herr != protocol::header_errc::ok || !role.accepts(h.type)) [[unlikely]] {
        role.on_bad_frame(h, herr);
        return false;
      }
      if (read_buf_.size() < h.frame_size()) {
        pending_frame_ = h.frame_size();
        role.on_partial_frame(h);
        detail::note_partial_frame();
        return true;
      }
      const frame_verdict v = role.on_frame(h, read_buf_.data() + protocol::header_size);
      if (v == frame_verdict::next || v == frame_verdict::last) [[likely]] {
        largest_ = std::max(largest_, h.frame_size());
        last_frame_ = h.frame_size();
        pending_frame_ = 0;
        read_buf_.consume(h.frame_size());
        if (v == frame_verdict::next) continue;
        return true;
      }
      return v == frame_verdict::hold;
    }
    pending_frame_ = 0;
    if (!read_buf_.empty()) detail::note_partial_frame();  // a header in pieces
    return true;
  }

  // Frames from this size up are never read past their end, so that the bytes of the next
  // frame land at the buffer's front once this one is taken. Read past, the next big frame
  // would begin near the buffer's end and have to be moved to its front to grow there (64 KiB
  // calls at c=16: a memmove of up to a frame per call, 90 % of the server's instructions).
  // Below it, one read takes as many small frames as have arrived.
  static constexpr std::size_t big_frame = 16 * 1024;

  // After a batch: a buffer grown for big frames goes back to the system once a drained
  // batch held none; while big frames keep coming it stays, so each is read straight into it
  // without reallocating (and re-faulting megabytes of fresh pages) per frame. `pressed`
  // (someone waits for memory): an empty buffer shrinks to `idle_size` whatever it held.
  // What the next read may take: the tail room, cut so that it ends at a frame's end when
  // the frame at the buffer's front is big: the rest of that frame, then as many whole frames
  // of its size as fit (the next ones are likely alike). With no header in yet, the last
  // frame's size stands for the front one's. A read then never leaves a big frame begun where
  // it has no room to finish, and several still come in one read.
  std::size_t read_offer() noexcept {
    const std::size_t room = read_buf_.tail_room();
    const std::size_t have = read_buf_.size();
    const std::size_t size = pending_frame_ != 0            ? pending_frame_
                             : have < protocol::header_size ? last_frame_
                                                            : 0;
    offered_ = room;
    if (size < big_frame || size <= have || size - have > room) return room;
    const std::size_t rest = size - have;
    offered_ = rest + (room - rest) / size * size;
    return offered_;
  }

  void end_batch(std::size_t idle_size, bool pressed) {
    if (read_buf_.empty() && (largest_ <= read_room::max || pressed)) {
      read_buf_.shrink_to(pressed ? idle_size : std::max(idle_size, read_room::max));
    }
    largest_ = 0;
  }

  // Back to an empty buffer of `idle_size` and the initial read room (the connection closed).
  void reset_reading(std::size_t idle_size) {
    read_buf_.clear();
    read_buf_.shrink_to(idle_size);
    room_.reset();
    largest_ = 0;
    pending_frame_ = last_frame_ = 0;
  }

  // ---- writing: one write in flight, of the frames in sending() ----
  outbound_queue& sending() noexcept { return sending_; }
  const outbound_queue& sending() const noexcept { return sending_; }
  // Writes all of sending(). `moved` (may be null): set whenever the write makes progress.
  template <class Handler>
  void write(byte_stream& stream, time_point* moved, Handler&& done) {
    write_calls_ = 0;
    sending_.gather(iov_);
    stream.async_write(iov_, &write_calls_, &clock.last_heard, moved, std::forward<Handler>(done));
  }
  // The write ended having written `n` bytes: counts it and empties sending().
  void end_write(std::size_t n, stats_counters& stats) noexcept {
    stats.on_write(sending_.frames(), write_calls_, n);
    if (peer_drained(write_calls_)) clock.last_heard = std::chrono::steady_clock::now();
    sending_.clear();
  }

  heartbeat_clock clock;

 private:
  byte_buffer read_buf_;
  read_room room_;
  std::size_t largest_ = 0;        // the largest frame of the current batch
  std::size_t pending_frame_ = 0;  // the partly read frame at the front, if its header is in
  std::size_t last_frame_ = 0;     // the last frame taken
  std::size_t offered_ = 0;        // what the read in flight may take: a full one grows the room
  outbound_queue sending_;
  std::vector<asio::const_buffer> iov_;  // sending_'s buffers, while its write is in flight
  std::uint64_t write_calls_ = 0;
};

}  // namespace corvid::detail
