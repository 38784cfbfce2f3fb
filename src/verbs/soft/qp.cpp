#include "qp.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>

namespace corvid::verbs::soft {
namespace {

rpc_error invalid(std::string what) {
  return rpc_error(rpc_errc::invalid_argument, "softverbs: " + std::move(what));
}

const char* state_name(qp_state s) {
  switch (s) {
    case qp_state::reset:
      return "RESET";
    case qp_state::init:
      return "INIT";
    case qp_state::rtr:
      return "RTR";
    case qp_state::rts:
      return "RTS";
    case qp_state::error:
      return "ERROR";
  }
  return "?";
}

sockaddr_un abstract_address(const std::string& name, socklen_t& len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  return addr;
}

constexpr std::uint64_t max_message = std::uint64_t{1} << 30;
// What a parked message's buffer starts with; it grows as its bytes arrive.
constexpr std::size_t park_reserve = 64 * 1024;

}  // namespace

result<std::unique_ptr<soft_qp>> soft_qp::create(std::shared_ptr<context> ctx,
                                                 const qp_init& init) {
  auto* scq = dynamic_cast<soft_cq*>(init.send_cq);
  auto* rcq = dynamic_cast<soft_cq*>(init.recv_cq);
  if (scq == nullptr || rcq == nullptr) {
    return unexpected(invalid("create_qp: send_cq and recv_cq must be softverbs queues"));
  }
  const device_attr& a = ctx->attr();
  const qp_caps& c = init.caps;
  if (c.max_send_wr == 0 || c.max_send_wr > a.max_qp_wr || c.max_recv_wr > a.max_qp_wr ||
      c.max_send_sge > a.max_sge || c.max_recv_sge > a.max_sge ||
      c.max_inline_data > a.max_inline_data) {
    return unexpected(invalid("create_qp: caps exceed the device's (max_qp_wr " +
                              std::to_string(a.max_qp_wr) + ", max_sge " +
                              std::to_string(a.max_sge) + ", max_inline_data " +
                              std::to_string(a.max_inline_data) + ")"));
  }
  std::unique_ptr<soft_qp> qp(new soft_qp(std::move(ctx), init, context::random_qpn()));

  // Bind the rendezvous socket now, so a peer may connect before we do. A random number
  // taken already (by a queue pair of this device) gets another draw.
  qp->listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  qp->timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  int bound = -1;
  for (int attempt = 0; attempt < 8 && qp->listener_ && bound != 0; ++attempt) {
    if (attempt > 0) qp->qpn_ = context::random_qpn();
    socklen_t len = 0;
    const sockaddr_un addr =
        abstract_address(listen_name(qp->ctx_->attr().gid, qp->qpn_, qp->psn_), len);
    bound = ::bind(qp->listener_.get(), reinterpret_cast<const sockaddr*>(&addr), len);
    if (bound != 0 && errno != EADDRINUSE) break;
  }
  if (!qp->listener_ || !qp->timer_ || bound != 0 || ::listen(qp->listener_.get(), 4) != 0) {
    return unexpected(rpc_error(rpc_errc::server_busy,
                                std::string("softverbs: create_qp: ") + std::strerror(errno)));
  }
  qp->watch(qp->timer_.get(), EPOLLIN);
  return qp;
}

soft_qp::soft_qp(std::shared_ptr<context> ctx, const qp_init& init, std::uint32_t qpn)
    : ctx_(std::move(ctx)),
      send_cq_(static_cast<soft_cq*>(init.send_cq)),
      recv_cq_(static_cast<soft_cq*>(init.recv_cq)),
      caps_(init.caps),
      qpn_(qpn),
      stage_(64 * 1024) {
  psn_ = context::random_psn();
  next_seq_ = psn_;
}

soft_qp::~soft_qp() {
  if (listener_watched_) unwatch(listener_.get());
  if (sock_) unwatch(sock_.get());
  if (timer_) unwatch(timer_.get());
}

endpoint_info soft_qp::local_info() const {
  endpoint_info info;
  info.qp_num = qpn_;
  info.lid = 0;
  info.gid = ctx_->attr().gid;
  info.psn = psn_;
  return info;
}

rpc_error soft_qp::connect(const endpoint_info& remote, const connect_options& options) {
  if (state_ != qp_state::init) {
    return invalid(std::string("connect: queue pair is in ") + state_name(state_) + ", not INIT");
  }
  if (options.rnr_retry > 7 || options.min_rnr_timer > 31 || options.retry_cnt > 7 ||
      options.timeout > 31) {
    return invalid("connect: rnr_retry/retry_cnt must be 0..7, min_rnr_timer/timeout 0..31");
  }
  if (!is_soft_gid(remote.gid)) {
    return rpc_error(rpc_errc::connect_failed,
                     "softverbs: the remote gid is not a softverbs address (is the peer using "
                     "the ibverbs provider?)");
  }
  const gid_t& mine = ctx_->attr().gid;
  if (remote.gid == mine && remote.qp_num == qpn_) {
    return invalid("connect: a queue pair cannot be connected to itself");
  }
  remote_ = remote;
  options_ = options;
  active_ = std::tie(mine, qpn_) < std::tie(remote.gid, remote.qp_num);
  // Call the peer's rendezvous socket. Its listener takes the connection even before the
  // peer connects itself, and stays up until its link is, so on the passive side this is a
  // probe: a missing peer is a clear error now instead of a timeout later.
  unique_fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  socklen_t len = 0;
  const sockaddr_un addr =
      abstract_address(listen_name(remote.gid, remote.qp_num, remote.psn), len);
  if (!s || (::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0 &&
             (active_ || errno != EAGAIN))) {
    return rpc_error(rpc_errc::connect_failed,
                     "softverbs: no queue pair " + std::to_string(remote.qp_num) +
                         " is listening at the peer (destroyed, its process exited, or wrong "
                         "endpoint_info): " +
                         std::strerror(errno));
  }
  if (active_) {
    sock_ = std::move(s);
    send_hello();
  } else {
    // Leave our hello in the peer's listener: if it calls us and hears nothing back for a
    // while, it can tell that we did reach RTR and are only slow to poll (a NIC would be
    // acking by now), rather than never connected (see peer_reached_rtr).
    probe_ = std::move(s);
    wire::frame_header h{};
    h.type = wire::frame_type::hello;
    h.length = sizeof(wire::hello);
    const wire::hello hello = make_hello();
    iovec iov[2] = {{&h, sizeof h}, {const_cast<wire::hello*>(&hello), sizeof hello}};
    [[maybe_unused]] const ssize_t n = ::writev(probe_.get(), iov, 2);
    watch(listener_.get(), EPOLLIN);
    listener_watched_ = true;
  }
  state_ = qp_state::rts;
  flush();
  update_interest();
  return {};
}

rpc_error soft_qp::post_send(const send_wr& wr) {
  if (state_ != qp_state::rts && state_ != qp_state::error) {
    return invalid(std::string("post_send: queue pair is in ") + state_name(state_) +
                   " (connect it first)");
  }
  if (wr.sg_list.size() > caps_.max_send_sge) {
    return invalid("post_send: " + std::to_string(wr.sg_list.size()) + " sges, max_send_sge is " +
                   std::to_string(caps_.max_send_sge));
  }
  std::uint64_t total = 0;
  for (const sge& s : wr.sg_list) total += s.length;
  if (total > max_message) return invalid("post_send: message larger than 1 GiB");
  if (wr.inline_data && total > caps_.max_inline_data) {
    return invalid("post_send: inline send of " + std::to_string(total) +
                   " bytes, max_inline_data is " + std::to_string(caps_.max_inline_data));
  }
  if (sq_.size() + retained_unsignaled_ >= caps_.max_send_wr) {
    return rpc_error(rpc_errc::server_busy, "softverbs: post_send: send queue full (" +
                                                std::to_string(caps_.max_send_wr) + ")");
  }
  const send_entry entry{wr.wr_id, next_seq_, static_cast<std::uint32_t>(total), wr.signaled};
  if (state_ == qp_state::error) {
    complete_send(entry, wc_status::wr_flush_err);
    return {};
  }
  if (!wr.inline_data) {
    for (const sge& s : wr.sg_list) {
      if (const wc_status st = ctx_->check(s.lkey, s.addr, s.length, 0); st != wc_status::success) {
        // As on hardware: the post is accepted, the request completes in error and the
        // queue pair with it (the error first, so it is what the caller sees first).
        complete_send(entry, st);
        fail(std::nullopt, std::nullopt);
        return {};
      }
    }
  }
  ++next_seq_;
  sq_.push_back(entry);
  wire::frame_header h{};
  h.type = wire::frame_type::data;
  h.flags = wr.imm ? wire::flag_imm : 0;
  h.seq = entry.seq;
  h.arg = wr.imm.value_or(0);
  h.length = entry.length;
  iovec iov[33];
  std::size_t n = 0;
  for (const sge& s : wr.sg_list) {
    if (s.length == 0) continue;
    iov[n++] = {reinterpret_cast<void*>(s.addr), s.length};
  }
  send_frame(h, std::span<const iovec>(iov, n));
  if (!peer_up_ && connect_deadline_ == clock::time_point::max()) {
    // Nobody answered yet: give the peer the transport retry budget to show up.
    if (options_.timeout != 0) {
      const auto per_try = std::chrono::microseconds(std::uint64_t{4} << options_.timeout);
      connect_deadline_ = clock::now() + per_try * (options_.retry_cnt + 1);
      arm_timer();
    }
  }
  update_interest();
  return {};
}

rpc_error soft_qp::post_recv(const recv_wr& wr) {
  if (state_ == qp_state::reset) return invalid("post_recv: queue pair is in RESET");
  if (wr.sg_list.size() > caps_.max_recv_sge) {
    return invalid("post_recv: " + std::to_string(wr.sg_list.size()) + " sges, max_recv_sge is " +
                   std::to_string(caps_.max_recv_sge));
  }
  if (rq_.size() >= caps_.max_recv_wr) {
    return rpc_error(rpc_errc::server_busy, "softverbs: post_recv: receive queue full (" +
                                                std::to_string(caps_.max_recv_wr) + ")");
  }
  recv_entry r{wr.wr_id, {wr.sg_list.begin(), wr.sg_list.end()}, 0};
  for (const sge& s : wr.sg_list) r.capacity += s.length;
  if (state_ == qp_state::error) {
    complete_recv(r, wc_status::wr_flush_err, 0, std::nullopt);
    return {};
  }
  rq_.push_back(std::move(r));
  if (!parked_.empty()) {
    deliver_parked();
    if (ack_pending_) send_ack();
    update_interest();
  }
  return {};
}

// --- frames from the peer -------------------------------------------------------------------

void soft_qp::on_hello(const wire::hello& h) {
  if (state_ == qp_state::error) return;
  const bool valid = h.magic == wire::hello_magic && h.dst_qpn == qpn_ &&
                     h.dst_gid == ctx_->attr().gid && h.src_qpn == remote_.qp_num &&
                     h.src_gid == remote_.gid && h.psn == remote_.psn && h.rnr_retry <= 7;
  if (!valid) {
    if (!active_) {
      reject_caller();  // not the peer we were told about
      return;
    }
    fail(wc_status::retry_exc_err, std::nullopt);
    return;
  }
  peer_up_ = true;
  peer_rnr_retry_ = h.rnr_retry;
  expected_seq_ = h.psn;
  connect_deadline_ = clock::time_point::max();
  if (!active_) {
    // Our hello must precede the data frames posted while we waited for the caller.
    std::vector<std::byte> queued = std::move(out_);
    std::deque<std::size_t> ends = std::move(frame_ends_);
    out_.clear();
    frame_ends_.clear();
    out_off_ = 0;
    frame_start_ = 0;
    send_hello();
    const std::size_t base = out_.size();
    out_.insert(out_.end(), queued.begin(), queued.end());
    for (std::size_t e : ends) frame_ends_.push_back(base + e);
  }
  if (listener_watched_) unwatch(listener_.get());
  listener_watched_ = false;
  listener_.reset();  // linked: nobody else may call
  probe_.reset();
  arm_timer();
}

bool soft_qp::peer_reached_rtr() {
  // The passive peer's connect() leaves a call with its hello in our listener's backlog.
  bool found = false;
  while (listener_ && !found) {
    unique_fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) break;
    if (!from_peer_process(fd.get())) continue;
    struct {
      wire::frame_header h;
      wire::hello hello;
    } msg{};
    if (::recv(fd.get(), &msg, sizeof msg, MSG_DONTWAIT) != static_cast<ssize_t>(sizeof msg)) {
      continue;
    }
    found = msg.h.type == wire::frame_type::hello && msg.hello.magic == wire::hello_magic &&
            msg.hello.src_qpn == remote_.qp_num && msg.hello.src_gid == remote_.gid &&
            msg.hello.dst_qpn == qpn_;
  }
  return found;
}

void soft_qp::on_ack(std::uint32_t seq) {
  // Cumulative: every send up to seq is in the peer's memory.
  while (!sq_.empty() && static_cast<std::int32_t>(seq - sq_.front().seq) >= 0) {
    const send_entry e = sq_.front();
    sq_.pop_front();
    complete_send(e, wc_status::success);
  }
}

void soft_qp::on_nak(wire::nak_kind kind, std::uint32_t seq) {
  // Delivery is in order, so everything before seq was placed.
  on_ack(seq - 1);
  wc_status st = wc_status::rem_op_err;
  if (kind == wire::nak_kind::rnr_retry_exceeded) st = wc_status::rnr_retry_exc_err;
  if (kind == wire::nak_kind::invalid_request) st = wc_status::rem_inv_req_err;
  fail(st, std::nullopt);
}

wc_status soft_qp::check_recv(const recv_entry& r, std::uint64_t length) const {
  if (length > r.capacity) return wc_status::loc_len_err;
  std::uint64_t left = length;
  for (const sge& s : r.sges) {
    if (left == 0) break;
    const wc_status st = ctx_->check(s.lkey, s.addr, s.length, access_local_write);
    if (st != wc_status::success) return st;
    left -= std::min<std::uint64_t>(left, s.length);
  }
  return wc_status::success;
}

void soft_qp::on_data_header(const wire::frame_header& h) {
  sink_ = sink::discard;
  if (state_ == qp_state::error) return;
  if (!peer_up_ || h.seq != expected_seq_ || h.length > max_message) {
    fail(std::nullopt, std::nullopt);  // not the protocol: treat as a broken link
    return;
  }
  ++expected_seq_;
  const std::optional<std::uint32_t> imm =
      (h.flags & wire::flag_imm) != 0 ? std::optional<std::uint32_t>(h.arg) : std::nullopt;
  if (parked_.empty() && !rq_.empty()) {
    const recv_entry& r = rq_.front();
    const wc_status st = check_recv(r, h.length);
    if (st != wc_status::success) {
      complete_recv(r, st, h.length, imm);
      rq_.pop_front();
      fail(std::nullopt,
           st == wc_status::loc_len_err ? wire::nak_kind::invalid_request
                                        : wire::nak_kind::remote_op,
           h.seq);
      return;
    }
    dest_.clear();
    std::uint64_t left = h.length;
    for (const sge& s : r.sges) {
      if (left == 0) break;
      const std::uint64_t take = std::min<std::uint64_t>(left, s.length);
      if (take != 0) dest_.push_back({reinterpret_cast<void*>(s.addr), take});
      left -= take;
    }
    sink_ = sink::recv;
    return;
  }
  // Receiver not ready: hardware would NAK the SEND here and the peer retry it.
  ++rnr_naks_;
  ctx_->count_rnr_nak();
  if (peer_rnr_retry_ == 0) {
    fail(std::nullopt, wire::nak_kind::rnr_retry_exceeded, h.seq);
    return;
  }
  // Parking costs the bytes as they arrive (body_bytes) plus the bookkeeping, so a flood of
  // empty SENDs counts too.
  if (!charge_parked(sizeof(parked_message), h.seq)) return;
  if (parked_.empty()) {
    rnr_deadline_ = rnr_deadline();
    arm_timer();
  }
  // The buffer grows as the bytes arrive: sized from the header alone, one 16-byte frame
  // would make us allocate (and zero) up to 1 GiB that the peer may never send.
  parked_.push_back({h.seq, imm, {}, false});
  parked_.back().data.reserve(std::min<std::size_t>(h.length, park_reserve));
  sink_ = sink::park;
}

void soft_qp::on_data_complete() {
  if (sink_ != sink::recv) return;
  const recv_entry r = std::move(rq_.front());
  rq_.pop_front();
  complete_recv(
      r, wc_status::success, hdr_.length,
      (hdr_.flags & wire::flag_imm) != 0 ? std::optional<std::uint32_t>(hdr_.arg) : std::nullopt);
  last_placed_ = hdr_.seq;
  ack_pending_ = true;
}

void soft_qp::deliver_parked() {
  while (!parked_.empty() && parked_.front().complete && !rq_.empty() &&
         state_ != qp_state::error) {
    parked_message& p = parked_.front();
    const recv_entry r = std::move(rq_.front());
    rq_.pop_front();
    const wc_status st = check_recv(r, p.data.size());
    if (st != wc_status::success) {
      complete_recv(r, st, static_cast<std::uint32_t>(p.data.size()), p.imm);
      fail(std::nullopt,
           st == wc_status::loc_len_err ? wire::nak_kind::invalid_request
                                        : wire::nak_kind::remote_op,
           p.seq);
      return;
    }
    std::size_t off = 0;
    for (const sge& s : r.sges) {
      const std::size_t take = std::min<std::size_t>(s.length, p.data.size() - off);
      if (take != 0) std::memcpy(reinterpret_cast<void*>(s.addr), p.data.data() + off, take);
      off += take;
    }
    complete_recv(r, wc_status::success, static_cast<std::uint32_t>(p.data.size()), p.imm);
    last_placed_ = p.seq;
    ack_pending_ = true;
    parked_bytes_ -= p.data.size() + sizeof(parked_message);
    parked_.pop_front();
    // The next parked message gets a fresh retry budget, as the sender's retry counter resets
    // once a retried send got through.
    rnr_deadline_ = parked_.empty() ? clock::time_point::max() : rnr_deadline();
  }
  arm_timer();
}

bool soft_qp::charge_parked(std::size_t n, std::uint32_t seq) {
  if (parked_bytes_ + n > ctx_->max_parked_bytes()) {
    // A peer honouring its send queue depth never gets here (a corvid stream parks at most
    // its send window of chunks); one that keeps sending without waiting for acks is failed
    // as RC hardware would fail it after its retries, instead of growing our memory.
    fail(std::nullopt, wire::nak_kind::rnr_retry_exceeded, seq);
    return false;
  }
  parked_bytes_ += n;
  return true;
}

soft_qp::clock::time_point soft_qp::rnr_deadline() const {
  if (peer_rnr_retry_ == 7) return clock::time_point::max();  // retry forever
  return clock::now() + std::chrono::microseconds(std::uint64_t{peer_rnr_retry_} *
                                                  rnr_timer_us(options_.min_rnr_timer));
}

// --- completions and errors ------------------------------------------------------------------

void soft_qp::complete_send(const send_entry& e, wc_status status) {
  if (status == wc_status::success && !e.signaled) {
    ++retained_unsignaled_;  // its slot frees when a later signaled send completes
    return;
  }
  retained_unsignaled_ = 0;
  work_completion wc;
  wc.wr_id = e.wr_id;
  wc.status = status;
  wc.opcode = wc_opcode::send;
  wc.byte_len = e.length;
  wc.qp_num = qpn_;
  send_cq_->push(wc);
}

void soft_qp::complete_recv(const recv_entry& r, wc_status status, std::uint32_t length,
                            std::optional<std::uint32_t> imm) {
  work_completion wc;
  wc.wr_id = r.wr_id;
  wc.status = status;
  wc.opcode = wc_opcode::recv;
  wc.byte_len = status == wc_status::success ? length : 0;
  wc.qp_num = qpn_;
  if (status == wc_status::success) wc.imm = imm;
  recv_cq_->push(wc);
}

void soft_qp::fail(std::optional<wc_status> head, std::optional<wire::nak_kind> nak,
                   std::uint32_t nak_seq) {
  if (state_ == qp_state::error) return;
  state_ = qp_state::error;
  bool first = true;
  while (!sq_.empty()) {
    const send_entry e = sq_.front();
    sq_.pop_front();
    complete_send(e, first && head ? *head : wc_status::wr_flush_err);
    first = false;
  }
  retained_unsignaled_ = 0;
  while (!rq_.empty()) {
    complete_recv(rq_.front(), wc_status::wr_flush_err, 0, std::nullopt);
    rq_.pop_front();
  }
  parked_.clear();
  parked_bytes_ = 0;
  sink_ = sink::discard;
  dest_.clear();
  connect_deadline_ = rnr_deadline_ = clock::time_point::max();
  arm_timer();
  if (listener_watched_) unwatch(listener_.get());
  listener_watched_ = false;
  listener_.reset();
  probe_.reset();
  if (!sock_) return;
  if (!active_ && !peer_up_) {
    close_socket();  // a caller that never said hello
    return;
  }
  // Last words: drop the frames not yet started (flushed requests were never sent), confirm
  // what we placed, and name the frame that failed. The socket closes once they are out.
  truncate_unsent();
  if (last_placed_) send_ack();
  if (nak) {
    wire::frame_header h{};
    h.type = wire::frame_type::nak;
    h.seq = nak_seq;
    h.arg = static_cast<std::uint32_t>(*nak);
    append_frame(h, nullptr, 0);
  }
  flush();
  update_interest();
}

void soft_qp::arm_timer() {
  if (!timer_) return;
  clock::time_point when = connect_deadline_;
  if (!parked_.empty()) when = std::min(when, rnr_deadline_);
  itimerspec spec{};
  if (when != clock::time_point::max()) {
    const auto left = std::max(when - clock::now(), clock::duration(std::chrono::microseconds(1)));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
  }
  ::timerfd_settime(timer_.get(), 0, &spec, nullptr);
}

void soft_qp::on_timer() {
  std::uint64_t expirations;
  if (::read(timer_.get(), &expirations, sizeof expirations) <= 0) return;
  const auto now = clock::now();
  if (!parked_.empty() && now >= rnr_deadline_) {
    // The sender ran out of RNR retries on the oldest parked message.
    fail(std::nullopt, wire::nak_kind::rnr_retry_exceeded, parked_.front().seq);
    return;
  }
  if (!peer_up_ && !sq_.empty() && now >= connect_deadline_) {
    if (active_ && peer_reached_rtr()) {
      // Connected but slow to poll: wait for it like a NIC would; losing it is still seen
      // at once (its listener closes and resets our call).
      connect_deadline_ = clock::time_point::max();
    } else {
      fail(wc_status::retry_exc_err, std::nullopt);  // the peer never connected
      return;
    }
  }
  arm_timer();
}

}  // namespace corvid::verbs::soft
