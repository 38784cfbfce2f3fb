// A server connection's reads: the read buffer taken, grown and given back, the read in
// flight, and what holds reading back. docs/architecture.md, "Admission".
#include "read_gate.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "corvid/memory/buffer_pool.hpp"

#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {
bool read_gate::close() noexcept {
  if (phase_ == phase::closed) return false;
  phase_ = phase::closed;
  return true;
}

void read_gate::begin() {
  // A connection that has sent nothing yet holds no read buffer: a million clients that
  // connect and then stay quiet (IoT, push) would otherwise hold read_buffer_size each.
  // TLS reads need a buffer for the record in progress, and RDMA reads have no wait.
  if (c_.stream_.read_cancellable() && c_.frames_.read_buffer().capacity() == 0) {
    wait_readable();
    return;
  }
  take_buffer();
}

void read_gate::wait_readable() {
  read_ = read_state::waiting;
  c_.stream_.socket().async_wait(
      asio::socket_base::wait_read,
      [self = c_.self()](const std::error_code& ec) { self->gate_.on_readable(ec); });
}

void read_gate::on_readable(const std::error_code& ec) {
  read_ = read_state::idle;
  if (closed()) return;
  if (ec) {
    stop();
    c_.close();
    return;
  }
  if (stopped()) {
    c_.close_if_done();
    return;
  }
  // A spurious wake-up costs a buffer until the next idle release: the read waits in it.
  c_.watch_.buffer_taken();
  take_buffer();
}

void read_gate::take_buffer() {
  // Read buffers come from the reactors' pools: connection churn does not reach malloc, and
  // neither does a buffer growing for a big frame and shrinking back (up to 256 KiB). It is
  // charged before it is taken; without room the connection waits for read memory, holding
  // none. (The connection object and the kernel's socket buffers are bounded by the number of
  // connections: server_config::max_connections and the process's descriptor limit.)
  const std::size_t size = buffer_pool::class_size(c_.core_.config.read_buffer_size);
  if (!c_.mem().reserve_first_read(size)) {
    wait_for_memory(true, size);
    return;
  }
  byte_buffer& buf = c_.frames_.read_buffer();
  const auto block = buffer_pool::for_this_thread().acquire(size);
  buf.adopt_storage(block.data, block.capacity);
  buf.draw_from_thread_pool();
  c_.mem().settle_read(buf.capacity());
  read_more();
}

void read_gate::read_more() {
  if (stopped() || reading() || c_.setup_.switching() || c_.paused()) return;
  if (read_ == read_state::yielded) {  // the rest of the buffer first, on the reactor's next turn
    post_resume();
    return;
  }
  connection_memory& mem = c_.mem();
  if (mem.replies_full(c_.writer().queued_bytes())) {
    // The client sends but does not read: read none of its requests until writes drain.
    c_.core_.stats.on_admission_pause();
    c_.adm_.pause(pause_reason::replies);
    c_.watch_.watch_hangup();
    return;
  }
  frame_stream& frames = c_.frames_;
  byte_buffer& buf = frames.read_buffer();
  // Growing the read room is reserved first; without memory the current buffer must do.
  if (frames.room().get() > buf.capacity() && !mem.reserve_read_speculative(frames.room().get())) {
    frames.room().cap(buf.capacity());
  }
  const std::size_t free_room = buf.capacity() - buf.size();
  frames.prepare_read(std::clamp<std::size_t>(free_room, 1, read_room::initial));
  mem.settle_read(buf.capacity());
  read_ = read_state::reading;
  auto done = [self = c_.self()](const std::error_code& ec, std::size_t n) {
    self->on_read(ec, n);
  };
  frames.read(c_.stream_, c_.stream_.read_cancellable() ? &read_cancel_ : nullptr, std::move(done));
}

void read_gate::post_resume() {
  if (std::exchange(resume_posted_, true)) return;
  asio::post(c_.reactor_, [self = c_.self()] {
    read_gate& g = self->gate_;
    g.resume_posted_ = false;
    // Another resume may have taken the frames meanwhile (and read on): then nothing.
    if (g.read_ != read_state::yielded) return;
    g.read_ = read_state::idle;
    self->resume();
  });
}

read_gate::read_end read_gate::read_not_plain(const std::error_code& ec, read_state was) noexcept {
  // Cancelled by reclaim() or release_idle() before it ran: nothing was read. (One that
  // completed first brings its bytes as usual.)
  if (was != read_state::reading && ec == asio::error::operation_aborted) {
    if (was == read_state::releasing) {
      give_back_buffer();
      // Nor does it keep reply credit for a next call (settle_replies' reply_keep).
      c_.mem().drop_reply_spare(c_.writer().queued_bytes());
      return read_end::released;
    }
    shrink_idle();
    return read_end::again;
  }
  if (ec) {
    stop();
    return ec == asio::error::eof ? read_end::peer_finished : read_end::failed;
  }
  return stopped() ? read_end::stopped : read_end::bytes;
}

bool read_gate::skip_some() noexcept {
  byte_buffer& buf = c_.frames_.read_buffer();  // the rest of a refused frame
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(skip_, buf.size()));
  buf.consume(n);
  skip_ -= n;
  return skip_ == 0;
}

void read_gate::offer_grown_buffer() {
  if (holding_ || !c_.stream_.read_cancellable() ||
      c_.frames_.read_buffer().capacity() <= c_.core_.config.read_buffer_size) {
    return;
  }
  holding_ = true;  // until reclaimed: then registered again by a later batch
  std::weak_ptr<server_connection> weak = c_.self();
  c_.core_.memory.add_holder(this, [weak] {
    if (auto c = weak.lock()) asio::post(c->reactor_, [c] { c->gate_.reclaim(); });
  });
}

bool read_gate::grown_frame_waits() const noexcept {
  const byte_buffer& buf = c_.frames_.read_buffer();
  return read_ != read_state::yielded && !buf.empty() &&
         buf.capacity() > c_.core_.config.read_buffer_size;
}

void read_gate::grow_for_frame(const protocol::frame_header& h) {
  byte_buffer& buf = c_.frames_.read_buffer();
  connection_memory& mem = c_.mem();
  const std::size_t have = buf.size();
  // What the buffer holds for the whole frame: the pool's size class (exact above them).
  const std::size_t whole = buffer_pool::class_size(h.frame_size());
  // A header claims a length; only bytes received prove it. Up to read_room::max the buffer
  // grows with what arrives (at most about twice it), so a peer that sends headers and stops
  // holds next to nothing. Past that, or when speculative growth is refused, the frame is
  // granted whole: a granted frame always completes, which keeps the server from filling up
  // with partial frames that all wait for memory. A frame larger than a quarter of the read
  // memory is granted at its header, as such a grant might otherwise never fit.
  if (whole <= c_.core_.memory.read_buffers.limit() / 4) {
    const std::size_t want = buffer_pool::class_size(std::min<std::size_t>(
        h.frame_size(), std::max({2 * have, c_.frames_.room().get(), read_room::initial})));
    if (want <= std::max(read_room::max, buf.capacity()) && mem.reserve_read_speculative(want)) {
      buf.reserve(want);
      buf.ensure_tail(std::min(h.frame_size(), buf.capacity()) - have);
      return;
    }
  }
  if (whole > buf.capacity()) {
    if (!mem.reserve_read(whole)) {
      if (!mem.read_could_fit(whole)) {
        // Waiting would never end. The frame is within max_frame_size, so the client sends
        // it whole: answer, and discard its bytes as they come.
        c_.writer().reply_error(h.request_id, rpc_errc::message_too_large,
                                "frame of " + std::to_string(h.frame_size()) +
                                    " bytes exceeds the server's read-buffer memory (" +
                                    std::to_string(c_.core_.memory.read_buffers.limit()) +
                                    " bytes)");
        skip_ = h.frame_size() - have;
        buf.consume(have);
        count_frame(false);
        return;
      }
      wait_for_memory(true, whole - buf.capacity());
      return;
    }
    buf.reserve(whole);
  }
  buf.ensure_tail(h.frame_size() - have);
}

void read_gate::wait_for_memory(bool for_read, std::size_t need) {
  c_.core_.stats.on_admission_pause();
  c_.adm_.pause(pause_reason::memory);
  c_.watch_.watch_hangup();
  std::weak_ptr<server_connection> weak = c_.self();
  connection_memory& mem = c_.mem();
  const bool light = for_read || mem.stays_light(need);
  c_.core_.memory.wait(
      [weak] {
        if (auto c = weak.lock()) asio::post(c->reactor_, [c] { c->gate_.resume_after_memory(); });
      },
      [&mem, for_read, need] {
        return (for_read ? mem.read_available() : mem.call_available()) >= need;
      },
      for_read, light, need);
}

void read_gate::resume_after_memory() {
  if (closed() || !c_.adm_.lift(pause_reason::memory)) return;
  if (c_.frames_.read_buffer().capacity() == 0) {  // waited for its read buffer
    take_buffer();
    return;
  }
  c_.resume();
}

void read_gate::reclaim() {
  holding_ = false;
  byte_buffer& buf = c_.frames_.read_buffer();
  if (closed() || !c_.stream_.read_cancellable() || skip_ != 0 ||
      buf.capacity() <= c_.core_.config.read_buffer_size) {
    return;
  }
  if (!buf.empty()) {
    // Mid-frame the buffer is in use (its batch end shrinks it while anyone waits), unless
    // the frame stopped arriving: memory granted for a frame its peer does not send is
    // taken back from a peer that stays silent for stall_grace() while others wait.
    if (c_.paused() || read_ == read_state::yielded) return;  // the silence is ours
    const connection_liveness& live = c_.watch_.live;
    const time_point now = std::chrono::steady_clock::now();
    if (now - c_.frames_.clock.last_heard >= live.stall_grace()) {
      c_.core_.stats.on_dead_peer();
      c_.close();
      return;
    }
    c_.watch_.recheck_at(c_.frames_.clock.last_heard + live.stall_grace());
    return;
  }
  if (read_ == read_state::releasing) return;  // the whole buffer is on its way back already
  if (reading()) {
    // Cancelling a read that has not run leaves the bytes in the kernel; if it already
    // completed, this does nothing and the batch end shrinks the buffer instead.
    read_ = read_state::reclaiming;
    read_cancel_.emit(asio::cancellation_type::total);
    return;
  }
  shrink_idle();
}

void read_gate::shrink_idle() {
  const std::size_t idle_size = c_.core_.config.read_buffer_size;
  c_.frames_.read_buffer().shrink_to(idle_size);
  c_.frames_.room().cap(idle_size);                           // regrow only by use
  c_.mem().settle_read(c_.frames_.read_buffer().capacity());  // releases, wakes the waiters
}

bool read_gate::holds_idle_buffer() const noexcept {
  const byte_buffer& buf = c_.frames_.read_buffer();
  return read_ == read_state::reading && skip_ == 0 && buf.empty() && buf.capacity() != 0 &&
         c_.stream_.read_cancellable();
}

void read_gate::release_idle() {
  if (closed() || !holds_idle_buffer()) return;
  // Cancelling a read that has not run leaves the bytes in the kernel; if it already
  // completed, this does nothing and the bytes are taken as usual.
  read_ = read_state::releasing;
  read_cancel_.emit(asio::cancellation_type::total);
}

void read_gate::give_back_buffer() noexcept {
  const auto [data, capacity] = c_.frames_.read_buffer().release_storage();
  if (capacity != 0) buffer_pool::for_this_thread().release({data, capacity});
  c_.frames_.room().cap(c_.core_.config.read_buffer_size);  // regrow only by use
  c_.mem().settle_read(0);                                  // releases, wakes the waiters
}

void read_gate::closed_socket() {
  if (holding_) c_.core_.memory.remove_holder(this);
  if (c_.stream_.is_rdma()) return;
  // The buffer goes back to this reactor's pool: no read lands in it any more (a socket read
  // in flight completes as aborted once the socket closes). An RDMA stream may still copy
  // into it until its own close completes, so that one stays until the end.
  give_back_buffer();
}

}  // namespace corvid::detail
