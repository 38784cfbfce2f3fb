// soft_qp's socket: accepting the peer, parsing frames, and writing them without blocking.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "qp.hpp"
#include <sys/socket.h>

namespace corvid::verbs::soft {
namespace {

constexpr std::size_t npos = static_cast<std::size_t>(-1);
// Payload bytes still to come above which they are read straight into the receive's
// buffers instead of through the staging buffer.
constexpr std::size_t direct_read_threshold = 16 * 1024;

bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

}  // namespace

void soft_qp::progress() {
  if (listener_watched_) on_listener();
  if (sock_) read_socket();
  if (connect_deadline_ != clock::time_point::max() || !parked_.empty()) on_timer();
  if (sock_) {
    if (ack_pending_ && state_ != qp_state::error) send_ack();
    flush();
  }
  update_interest();
}

void soft_qp::on_listener() {
  if (sock_) return;
  for (;;) {
    unique_fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) return;  // spurious, or the caller already gave up
    // A caller from another process got here first (it knew or guessed our name): hang up
    // at once, or its silence would keep the real peer waiting in the backlog.
    if (!from_peer_process(fd.get())) continue;
    // One caller at a time: it must say hello before anyone else is heard.
    unwatch(listener_.get());
    listener_watched_ = false;
    sock_ = std::move(fd);
    sock_events_ = 0;
    return;
  }
}

bool soft_qp::from_peer_process(int fd) const {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  return static_cast<std::uint32_t>(cred.pid) == gid_pid(remote_.gid);
}

void soft_qp::reject_caller() {
  close_socket();
  if (listener_) {
    watch(listener_.get(), EPOLLIN);
    listener_watched_ = true;
  }
}

void soft_qp::read_socket() {
  // Not re-entered: a write failing inside a frame's handling (fail() flushing the last
  // words) must not parse the next frame over the one in progress.
  if (reading_) return;
  reading_ = true;
  struct reset_flag {
    bool& flag;
    ~reset_flag() { flag = false; }
  } reset{reading_};
  while (sock_) {
    if (stage_begin_ == stage_end_) {
      if (in_body_ && sink_ == sink::recv && body_left_ >= direct_read_threshold) {
        if (!read_body_direct()) return;
        continue;
      }
      const ssize_t n = ::recv(sock_.get(), stage_.data(), stage_.size(), MSG_DONTWAIT);
      if (n > 0) {
        stage_begin_ = 0;
        stage_end_ = static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && would_block(errno)) {
        return;
      } else {
        peer_lost();  // EOF or reset: the peer's process or queue pair is gone
        return;
      }
    }
    consume();
  }
}

void soft_qp::consume() {
  while (sock_ && stage_begin_ < stage_end_) {
    const std::byte* p = stage_.data() + stage_begin_;
    const std::size_t avail = stage_end_ - stage_begin_;
    if (!in_body_) {
      const std::size_t take = std::min(avail, sizeof hdr_ - hdr_have_);
      std::memcpy(reinterpret_cast<std::byte*>(&hdr_) + hdr_have_, p, take);
      hdr_have_ += take;
      stage_begin_ += take;
      if (hdr_have_ == sizeof hdr_) {
        hdr_have_ = 0;
        on_header();
      }
    } else {
      const std::size_t take = std::min(avail, body_left_);
      body_bytes(p, take);
      stage_begin_ += take;
      body_left_ -= take;
      if (body_left_ == 0) body_done();
    }
  }
}

void soft_qp::on_header() {
  switch (hdr_.type) {
    case wire::frame_type::hello:
      if (hdr_.length != sizeof(wire::hello) || peer_up_) return protocol_violation();
      sink_ = sink::hello;
      break;
    case wire::frame_type::data:
      if (!peer_up_) return protocol_violation();
      on_data_header(hdr_);
      break;
    case wire::frame_type::ack:
      if (hdr_.length != 0 || !peer_up_) return protocol_violation();
      if (state_ != qp_state::error) on_ack(hdr_.seq);
      return;
    case wire::frame_type::nak:
      if (hdr_.length != 0 || !peer_up_) return protocol_violation();
      on_nak(static_cast<wire::nak_kind>(hdr_.arg), hdr_.seq);
      return;
    default:
      return protocol_violation();
  }
  if (!sock_) return;
  in_body_ = true;
  body_left_ = hdr_.length;
  body_pos_ = 0;
  if (body_left_ == 0) body_done();
}

void soft_qp::body_bytes(const std::byte* p, std::size_t n) {
  switch (sink_) {
    case sink::hello:
      std::memcpy(reinterpret_cast<std::byte*>(&hello_in_) + body_pos_, p, n);
      break;
    case sink::park: {
      if (!charge_parked(n, parked_.back().seq)) return;  // failed: the rest is discarded
      std::vector<std::byte>& data = parked_.back().data;
      data.insert(data.end(), p, p + n);  // body_pos_ == data.size()
      break;
    }
    case sink::recv: {
      std::size_t skip = body_pos_;
      for (const iovec& d : dest_) {
        if (n == 0) break;
        if (skip >= d.iov_len) {
          skip -= d.iov_len;
          continue;
        }
        const std::size_t take = std::min(n, d.iov_len - skip);
        std::memcpy(static_cast<std::byte*>(d.iov_base) + skip, p, take);
        p += take;
        n -= take;
        skip = 0;
        body_pos_ += take;
      }
      return;
    }
    case sink::discard:
      break;
  }
  body_pos_ += n;
}

bool soft_qp::read_body_direct() {
  iovec iov[64];
  int n = 0;
  std::size_t skip = body_pos_;
  for (const iovec& d : dest_) {
    if (skip >= d.iov_len) {
      skip -= d.iov_len;
      continue;
    }
    iov[n++] = {static_cast<std::byte*>(d.iov_base) + skip, d.iov_len - skip};
    skip = 0;
    if (n == 64) break;
  }
  const ssize_t r = ::readv(sock_.get(), iov, n);
  if (r > 0) {
    body_pos_ += static_cast<std::size_t>(r);
    body_left_ -= static_cast<std::size_t>(r);
    if (body_left_ == 0) body_done();
    return true;
  }
  if (r < 0 && errno == EINTR) return true;
  if (r < 0 && would_block(errno)) return false;
  peer_lost();
  return false;
}

void soft_qp::body_done() {
  in_body_ = false;
  switch (sink_) {
    case sink::hello:
      on_hello(hello_in_);
      break;
    case sink::recv:
      on_data_complete();
      break;
    case sink::park:
      parked_.back().complete = true;
      deliver_parked();  // a receive may have been posted while it arrived
      break;
    case sink::discard:
      break;
  }
  sink_ = sink::discard;
}

void soft_qp::protocol_violation() {
  if (!active_ && !peer_up_) return reject_caller();
  fail(std::nullopt, std::nullopt);
  close_socket();
}

void soft_qp::write_failed() {
  // The peer closed its end (EPIPE/ECONNRESET). Its last words are still readable before
  // the end of the stream: an ack, or a NAK saying why its queue pair failed (RNR retries
  // exhausted, receive too small). Read them first, so the sender's error is that reason
  // and not "the peer did not acknowledge"; the end of the stream then calls peer_lost().
  read_socket();
  if (sock_) peer_lost();
}

void soft_qp::peer_lost() {
  if (!active_ && !peer_up_ && state_ != qp_state::error) return reject_caller();
  // Hardware would notice on the next send's retries; the head send fails like that.
  fail(wc_status::retry_exc_err, std::nullopt);
  close_socket();
}

// --- writing ---------------------------------------------------------------------------------

void soft_qp::append_frame(const wire::frame_header& h, const void* body, std::size_t n) {
  const iovec iov{const_cast<void*>(body), n};
  append_frame(h, std::span<const iovec>(&iov, n == 0 ? 0 : 1), 0);
}

// Appends the frame's bytes from offset `skip` on (the first `skip` went to the socket).
void soft_qp::append_frame(const wire::frame_header& h, std::span<const iovec> body,
                           std::size_t skip) {
  if (out_.empty()) frame_start_ = skip == 0 ? 0 : npos;
  auto put = [&](const void* p, std::size_t n) {
    if (skip >= n) {
      skip -= n;
      return;
    }
    const auto* b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b + skip, b + n);
    skip = 0;
  };
  put(&h, sizeof h);
  for (const iovec& v : body) put(v.iov_base, v.iov_len);
  frame_ends_.push_back(out_.size());
}

void soft_qp::send_frame(const wire::frame_header& h, std::span<const iovec> body) {
  std::size_t sent = 0;
  if (out_.empty() && can_write()) {
    // Nothing queued: straight from the caller's buffers to the socket.
    iovec iov[34];
    iov[0] = {const_cast<wire::frame_header*>(&h), sizeof h};
    std::size_t total = sizeof h;
    std::size_t n = 1;
    for (const iovec& v : body) {
      iov[n++] = v;
      total += v.iov_len;
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = n;
    const ssize_t w = ::sendmsg(sock_.get(), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && !would_block(errno) && errno != EINTR) return write_failed();
    if (w > 0) sent = static_cast<std::size_t>(w);
    if (sent == total) return;
  }
  append_frame(h, body, sent);
}

void soft_qp::send_ack() {
  ack_pending_ = false;
  if (!last_placed_) return;
  wire::frame_header h{};
  h.type = wire::frame_type::ack;
  h.seq = *last_placed_;
  send_frame(h, {});
}

wire::hello soft_qp::make_hello() const {
  wire::hello hello{};
  hello.magic = wire::hello_magic;
  hello.src_qpn = qpn_;
  hello.dst_qpn = remote_.qp_num;
  hello.psn = psn_;
  hello.src_gid = ctx_->attr().gid;
  hello.dst_gid = remote_.gid;
  hello.rnr_retry = options_.rnr_retry;
  return hello;
}

void soft_qp::send_hello() {
  const wire::hello hello = make_hello();
  wire::frame_header h{};
  h.type = wire::frame_type::hello;
  h.length = sizeof hello;
  append_frame(h, &hello, sizeof hello);
}

void soft_qp::flush() {
  if (!can_write()) return;
  while (out_off_ < out_.size()) {
    const ssize_t w =
        ::send(sock_.get(), out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL);
    if (w > 0) {
      out_off_ += static_cast<std::size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && would_block(errno)) {
      break;
    } else {
      return write_failed();
    }
  }
  while (!frame_ends_.empty() && frame_ends_.front() <= out_off_) {
    frame_start_ = frame_ends_.front();
    frame_ends_.pop_front();
  }
  if (out_off_ == out_.size()) {
    out_.clear();
    out_off_ = 0;
    frame_start_ = 0;
    frame_ends_.clear();
    if (state_ == qp_state::error) close_socket();  // the last words are out
  } else if (out_off_ >= (std::size_t{1} << 20) && out_off_ * 2 > out_.size()) {
    // Drop the sent prefix so a long backlog does not keep it alive.
    out_.erase(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(out_off_));
    for (std::size_t& e : frame_ends_) e -= out_off_;
    if (frame_start_ != npos)
      frame_start_ = frame_start_ >= out_off_ ? frame_start_ - out_off_ : npos;
    out_off_ = 0;
  }
}

// Drops the data frames not started yet (their requests are being flushed: hardware would
// never send them); keeps the frame in progress, and hello/ack/nak frames.
void soft_qp::truncate_unsent() {
  if (out_off_ == out_.size() || frame_ends_.empty()) return;
  std::vector<std::byte> kept(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(out_off_));
  std::deque<std::size_t> ends;
  std::size_t start = frame_start_ == npos ? 0 : frame_start_;
  for (std::size_t end : frame_ends_) {
    const bool started = frame_start_ == npos ? start == 0 : start < out_off_;
    wire::frame_header h{};
    if (!started) std::memcpy(&h, out_.data() + start, sizeof h);
    if (started || h.type != wire::frame_type::data) {
      kept.insert(kept.end(), out_.begin() + static_cast<std::ptrdiff_t>(std::max(start, out_off_)),
                  out_.begin() + static_cast<std::ptrdiff_t>(end));
      ends.push_back(kept.size());
    }
    start = end;
  }
  out_ = std::move(kept);
  frame_ends_ = std::move(ends);
}

void soft_qp::close_socket() {
  if (!sock_) return;
  unwatch(sock_.get());
  sock_.reset();
  sock_events_ = 0;
  stage_begin_ = stage_end_ = 0;
  hdr_have_ = 0;
  in_body_ = false;
  sink_ = sink::discard;
  if (state_ == qp_state::error) {
    out_.clear();
    out_off_ = 0;
    frame_start_ = 0;
    frame_ends_.clear();
  }
}

void soft_qp::update_interest() {
  if (!sock_) return;
  const std::uint32_t want =
      EPOLLIN | (out_off_ < out_.size() && can_write() ? std::uint32_t{EPOLLOUT} : 0u);
  if (want == sock_events_) return;
  watch(sock_.get(), want);
  sock_events_ = want;
}

void soft_qp::watch(int fd, std::uint32_t events) {
  send_cq_->watch(fd, events, this);
  if (recv_cq_ != send_cq_) recv_cq_->watch(fd, events, this);
}

void soft_qp::unwatch(int fd) {
  send_cq_->unwatch(fd);
  if (recv_cq_ != send_cq_) recv_cq_->unwatch(fd);
}

}  // namespace corvid::verbs::soft
