#include "rdma_stream.hpp"

#include <algorithm>
#include <cstring>

#include "../runtime/asio_all.hpp"
#include "rdma_error.hpp"
#include <netinet/in.h>

namespace corvid::rdma {
namespace {

// Posted sends get this long to complete after close() before the queue pair goes.
constexpr auto linger_time = std::chrono::seconds(1);

std::error_code error_of(verbs::wc_status s) {
  switch (s) {
    case verbs::wc_status::rnr_retry_exc_err:
      return rdma_errc::rnr_retry_exceeded;
    case verbs::wc_status::retry_exc_err:
      return rdma_errc::retry_exceeded;
    case verbs::wc_status::wr_flush_err:
      return rdma_errc::flushed;
    default:
      return rdma_errc::transport_error;
  }
}

// Deregisters the chunks just given back once they have been idle for idle_chunk_release
// (unless a connection takes them first): otherwise they would stay registered until the
// pool's next use, which may never come. The timer owns itself through its handler and holds
// the pool weakly, so it keeps nothing alive and needs no cancelling: it runs on `reactor`,
// or is destroyed unrun with it when its server or client stops. (A timer lost that way
// leaves its chunks to the pool's next use, as before.)
void trim_when_idle(const std::weak_ptr<chunk_pool>& weak, asio::io_context& reactor) {
  const std::shared_ptr<chunk_pool> pool = weak.lock();
  const auto due = pool ? pool->schedule_trim() : std::nullopt;
  if (!due) return;
  auto timer = std::make_shared<asio::steady_timer>(reactor, *due);
  timer->async_wait([timer, weak](const std::error_code& ec) {
    if (ec) return;
    if (const auto p = weak.lock()) p->trim();
  });
}

}  // namespace

expected<std::shared_ptr<rdma_stream>, rpc_error> rdma_stream::create(
    std::shared_ptr<rdma_context> ctx, asio::io_context& reactor, rdma_counters* counters) {
  auto s = std::make_shared<rdma_stream>(std::move(ctx), reactor, counters);
  if (auto e = s->setup()) return unexpected(std::move(e));
  return s;
}

rdma_stream::rdma_stream(std::shared_ptr<rdma_context> ctx, asio::io_context& reactor,
                         rdma_counters* counters)
    : ctx_(std::move(ctx)),
      reactor_(reactor),
      registry_(asio::use_service<stream_registry>(reactor)),
      counters_(counters) {
  registry_.add(this);
}

rpc_error rdma_stream::setup() {
  const ibv_config& cfg = ctx_->config();
  const auto& attr = ctx_->device().attr();
  const auto depth = static_cast<std::uint32_t>(cfg.recv_buffers + cfg.send_window);
  auto cq = ctx_->device().create_cq(depth + 1);
  if (!cq) return std::move(cq).error();
  cq_ = std::move(*cq);
  verbs::qp_init init;
  init.send_cq = init.recv_cq = cq_.get();
  init.caps.max_send_wr = static_cast<std::uint32_t>(cfg.send_window);
  init.caps.max_recv_wr = static_cast<std::uint32_t>(cfg.recv_buffers);
  init.caps.max_inline_data = std::min<std::uint32_t>(
      static_cast<std::uint32_t>(cfg.inline_threshold), attr.max_inline_data);
  auto qp = ctx_->pd().create_qp(init);
  if (!qp) return std::move(qp).error();
  qp_ = std::move(*qp);
  inline_limit_ = std::min<std::uint32_t>(static_cast<std::uint32_t>(cfg.inline_threshold),
                                          qp_->caps().max_inline_data);

  std::vector<registered_chunk> chunks;
  if (!ctx_->pool().acquire(depth, chunks)) {
    const auto st = ctx_->pool().stats();
    return {rpc_errc::server_busy,
            "RDMA chunk pool at its watermark: " + std::to_string(st.registered_bytes) + " of " +
                std::to_string(ctx_->pool().watermark()) +
                " bytes registered, a connection needs " + std::to_string(depth * cfg.chunk_size) +
                " (ibv_config::pool_watermark)"};
  }
  recv_chunks_.assign(chunks.begin(),
                      chunks.begin() + static_cast<std::ptrdiff_t>(cfg.recv_buffers));
  send_chunks_.assign(chunks.begin() + static_cast<std::ptrdiff_t>(cfg.recv_buffers), chunks.end());
  for (std::uint32_t i = 0; i < send_chunks_.size(); ++i) free_slots_.push_back(i);
  backlog_.reserve(recv_chunks_.size());
  wcs_.resize(depth);
  for (std::uint32_t i = 0; i < recv_chunks_.size(); ++i) {
    const verbs::sge s = verbs::sge::of(recv_chunks_[i].data, cfg.chunk_size, recv_chunks_[i].lkey);
    if (auto e = qp_->post_recv({i, {&s, 1}})) return e;
  }
  int fd = cq_->event_fd();
  cq_fd_.emplace(reactor_, fd);
  return {};
}

rdma_stream::~rdma_stream() {
  registry_.remove(this);  // first: a reactor shutting down must not reach a dying stream
  on_closed_ = nullptr;    // the owner may be mid-destruction too: no call back into it
  // Maybe inside the reactor's own destruction (its handlers held the last reference): no
  // new timer on it then.
  destroy(false);
}

rdma_stream::abandoned rdma_stream::abandon() noexcept {
  return {std::move(read_handler_), std::move(write_handler_), std::move(on_closed_)};
}

rpc_error rdma_stream::connect(const verbs::endpoint_info& remote, std::size_t peer_max_message) {
  max_send_ = std::min(ctx_->config().chunk_size, peer_max_message);
  if (max_send_ == 0) return {rpc_errc::protocol_error, "peer accepts no RDMA message size"};
  verbs::connect_options opts;
  opts.rnr_retry = ctx_->config().rnr_retry;
  opts.min_rnr_timer = ctx_->config().min_rnr_timer;
  opts.timeout = ctx_->config().ack_timeout;
  opts.retry_cnt = ctx_->config().retry_count;
  if (auto e = qp_->connect(remote, opts)) return e;
  if (auto e = cq_->request_notify()) return e;
  connected_ = true;
  drain();
  wait_cq();
  return {};
}

void rdma_stream::attach_side_channel(asio::generic::stream_protocol::socket socket, bool was_tls) {
  side_.emplace(std::move(socket));
  side_was_tls_ = was_tls;
  watch_side_channel();
}

void rdma_stream::guard_setup(std::unique_ptr<detail::shared_slots::ticket> ticket,
                              std::chrono::milliseconds timeout) {
  setup_ticket_ = std::move(ticket);
  setup_timer_.emplace(reactor_);
  setup_timer_->expires_after(timeout);
  setup_timer_->async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec || self->destroyed_ || !self->setup_ticket_) return;
    self->end_setup();
    self->fail(rdma_errc::setup_timeout);
  });
}

void rdma_stream::end_setup() {
  setup_ticket_.reset();
  if (setup_timer_) setup_timer_->cancel();
}

rpc_error rdma_stream::announce() {
  if (free_slots_.empty()) return {rpc_errc::server_busy, "RDMA setup: no send slot"};
  const std::uint32_t slot = free_slots_.back();
  verbs::send_wr wr;
  wr.wr_id = send_tag | slot;
  wr.sg_list = {};  // empty: the peer's receive completes with 0 bytes, which reads as none
  if (auto e = qp_->post_send(wr)) return e;
  free_slots_.pop_back();
  return {};
}

// ---- completions ------------------------------------------------------------------------

void rdma_stream::wait_cq() {
  if (waiting_ || destroyed_) return;
  waiting_ = true;
  cq_fd_->async_wait(asio::posix::stream_descriptor::wait_read,
                     [self = shared_from_this()](const std::error_code& ec) {
                       self->waiting_ = false;
                       if (!ec && !self->destroyed_) self->on_cq_ready();
                     });
}

void rdma_stream::on_cq_ready() {
  // Consume the event, re-arm, then drain: a completion after the arm wakes the fd again.
  cq_->consume_events();
  if (auto e = cq_->request_notify()) fail(rdma_errc::transport_error);
  drain();
  if (!destroyed_) wait_cq();
}

void rdma_stream::drain() {
  if (destroyed_ || draining_) return;
  draining_ = true;
  for (;;) {
    auto n = cq_->poll(wcs_);
    if (!n) {
      fail(rdma_errc::transport_error);
      break;
    }
    if (*n == 0) break;
    for (std::size_t i = 0; i < *n; ++i) {
      const verbs::work_completion& wc = wcs_[i];
      const bool is_send = (wc.wr_id & send_tag) != 0;
      const auto index = static_cast<std::uint32_t>(wc.wr_id);
      if (wc.status != verbs::wc_status::success) {
        if (is_send) free_slots_.push_back(index);
        if (wc.status == verbs::wc_status::wr_flush_err && side_ && !error_) {
          peer_lost();  // the side channel says whether the peer closed or failed
          continue;
        }
        counters_->on_rdma_error(wc.status == verbs::wc_status::rnr_retry_exc_err);
        fail(error_of(wc.status));
        continue;
      }
      if (setup_ticket_) end_setup();  // the peer's queue pair works
      if (is_send) {
        on_send_done(index);
      } else {
        // An empty receive is the peer's announce(): nothing for the reader, not a message.
        if (wc.byte_len != 0) counters_->on_rdma_receive();
        deliver(index, wc.byte_len);
      }
    }
  }
  draining_ = false;
  if (closed_) {
    if (free_slots_.size() == send_chunks_.size() || error_) destroy();
    return;
  }
  pump_sends();
  if (read_filled_ > 0 || error_) complete_read();
  finish_write_if_done();
}

void rdma_stream::on_send_done(std::uint32_t slot) { free_slots_.push_back(slot); }

// ---- receiving --------------------------------------------------------------------------

void rdma_stream::deliver(std::uint32_t chunk, std::uint32_t length) {
  std::uint32_t taken = 0;
  if (read_handler_ && backlog_head_ == backlog_.size() && !closed_) {
    taken = static_cast<std::uint32_t>(std::min<std::size_t>(length, read_size_ - read_filled_));
    std::memcpy(read_data_ + read_filled_, recv_chunks_[chunk].data, taken);
    read_filled_ += taken;
  }
  if (taken == length) {
    repost(chunk);
  } else {
    backlog_.push_back({chunk, taken, length - taken});
  }
}

std::size_t rdma_stream::serve_backlog() {
  while (backlog_head_ < backlog_.size() && read_filled_ < read_size_) {
    received& r = backlog_[backlog_head_];
    const std::size_t n = std::min<std::size_t>(r.length, read_size_ - read_filled_);
    std::memcpy(read_data_ + read_filled_, recv_chunks_[r.chunk].data + r.offset, n);
    read_filled_ += n;
    r.offset += static_cast<std::uint32_t>(n);
    r.length -= static_cast<std::uint32_t>(n);
    if (r.length == 0) {
      ++backlog_head_;
      repost(r.chunk);
    }
  }
  if (backlog_head_ == backlog_.size()) {
    backlog_.clear();
    backlog_head_ = 0;
  }
  return read_filled_;
}

void rdma_stream::repost(std::uint32_t chunk) {
  if (error_ || destroyed_) return;
  const verbs::sge s =
      verbs::sge::of(recv_chunks_[chunk].data, ctx_->config().chunk_size, recv_chunks_[chunk].lkey);
  if (qp_->post_recv({chunk, {&s, 1}})) fail(rdma_errc::transport_error);
}

void rdma_stream::async_read_some(char* data, std::size_t size, io_handler handler) {
  read_data_ = data;
  read_size_ = size;
  read_filled_ = 0;
  read_handler_ = std::move(handler);
  const bool ready = backlog_head_ < backlog_.size() || error_ || closed_ || peer_closed_;
  if (!ready || read_scheduled_) return;
  // Complete later, never inside the caller (it would recurse through its handler).
  read_scheduled_ = true;
  asio::post(reactor_, [self = shared_from_this()] {
    self->read_scheduled_ = false;
    if (!self->read_handler_) return;
    self->serve_backlog();
    self->complete_read();
  });
}

void rdma_stream::complete_read() {
  if (!read_handler_) return;
  std::error_code ec;
  if (read_filled_ == 0) {
    if (closed_) {
      ec = asio::error::operation_aborted;
    } else if (error_) {
      ec = error_;
    } else if (peer_closed_) {
      ec = asio::error::eof;
    } else {
      return;  // nothing yet: stays pending
    }
  }
  const std::size_t n = std::exchange(read_filled_, 0);
  read_data_ = nullptr;
  read_handler_(ec, n);
}

// ---- sending ----------------------------------------------------------------------------

void rdma_stream::async_write(const std::vector<asio::const_buffer>& buffers, std::uint64_t* sends,
                              io_handler handler) {
  write_bufs_.assign(buffers.begin(), buffers.end());
  write_index_ = write_offset_ = 0;
  write_total_ = write_left_ = asio::buffer_size(buffers);
  write_sends_ = sends;
  write_handler_ = std::move(handler);
  pump_sends();
  if (write_left_ == 0 || error_ || closed_ || peer_closed_) {
    asio::post(reactor_, [self = shared_from_this()] { self->finish_write_if_done(); });
  }
}

void rdma_stream::pump_sends() {
  while (write_left_ > 0 && !free_slots_.empty() && !error_ && !closed_ && !peer_closed_ &&
         connected_) {
    const std::uint32_t slot = free_slots_.back();
    const std::size_t n = std::min(write_left_, max_send_);
    char* dst = send_chunks_[slot].data;
    std::size_t copied = 0;
    while (copied < n) {  // gather the next n bytes of the write into the chunk
      const auto& b = write_bufs_[write_index_];
      const std::size_t take = std::min(n - copied, b.size() - write_offset_);
      std::memcpy(dst + copied, static_cast<const char*>(b.data()) + write_offset_, take);
      copied += take;
      write_offset_ += take;
      if (write_offset_ == b.size()) {
        ++write_index_;
        write_offset_ = 0;
      }
    }
    const verbs::sge s = verbs::sge::of(dst, n, send_chunks_[slot].lkey);
    verbs::send_wr wr;
    wr.wr_id = send_tag | slot;
    wr.sg_list = {&s, 1};
    wr.inline_data = n <= inline_limit_;
    if (auto e = qp_->post_send(wr)) {
      fail(rdma_errc::transport_error);
      return;
    }
    free_slots_.pop_back();
    write_left_ -= n;
    ++*write_sends_;
    counters_->on_rdma_send(wr.inline_data);
  }
}

void rdma_stream::finish_write_if_done() {
  if (!write_handler_) return;
  std::error_code ec;
  if (closed_) {
    ec = asio::error::operation_aborted;
  } else if (error_) {
    ec = error_;
  } else if (peer_closed_ && write_left_ > 0) {
    ec = rdma_errc::peer_closed;
  } else if (write_left_ > 0) {
    return;  // waits for send completions to free the window
  }
  write_bufs_.clear();
  write_handler_(ec, ec ? 0 : write_total_);
}

// ---- failure, peer loss, close ----------------------------------------------------------

void rdma_stream::fail(std::error_code ec) {
  if (error_) return;
  error_ = ec;
  if (draining_) return;  // drain() completes the handlers at its end
  // Never inside the caller: it may be in the middle of a read or write of its own.
  asio::post(reactor_, [self = shared_from_this()] {
    self->complete_read();
    self->finish_write_if_done();
  });
}

void rdma_stream::watch_side_channel() {
  side_->async_read_some(asio::buffer(&side_byte_, 1),
                         [self = shared_from_this()](const std::error_code& ec, std::size_t) {
                           if (self->destroyed_ || self->closed_) return;
                           if (!ec && !self->side_was_tls_) {
                             self->fail(rdma_errc::protocol_error);
                             return;
                           }
                           self->on_side_channel_closed();
                         });
}

void rdma_stream::peer_lost() {
  // The queue pair was flushed without an error of ours: the peer's went away. A peer that
  // closed cleanly closes the side channel too (and everything it sent has arrived), so give
  // that a moment to be seen before calling it a failure.
  if (flush_timer_ || peer_closed_) return;
  flush_timer_.emplace(reactor_);
  flush_timer_->expires_after(std::chrono::seconds(2));
  flush_timer_->async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (!ec && !self->destroyed_ && !self->peer_closed_) self->fail(rdma_errc::flushed);
  });
}

void rdma_stream::on_side_channel_closed() {
  // What the peer sent before closing is complete in our queue (it waits for its sends to
  // be acknowledged before it closes): take it first, then report end of stream.
  drain();
  peer_closed_ = true;
  if (read_filled_ == 0 && backlog_head_ == backlog_.size()) complete_read();
  finish_write_if_done();
}

void rdma_stream::close(std::function<void()> closed) {
  if (closed_) {
    if (closed) closed();
    return;
  }
  closed_ = true;
  counters_ = &after_close_;
  on_closed_ = std::move(closed);
  if (read_handler_ || write_handler_) {
    asio::post(reactor_, [self = shared_from_this()] {
      self->complete_read();
      self->finish_write_if_done();
    });
  }
  write_left_ = 0;
  const bool sends_pending = free_slots_.size() != send_chunks_.size();
  if (sends_pending && connected_ && !error_) {
    linger_.emplace(reactor_);
    linger_->expires_after(linger_time);
    linger_->async_wait([self = shared_from_this()](const std::error_code& ec) {
      if (!ec) self->destroy();
    });
    return;  // drain() destroys once the window is empty
  }
  asio::post(reactor_, [self = shared_from_this()] { self->destroy(); });
}

void rdma_stream::destroy(bool trim_later) {
  if (destroyed_) return;
  destroyed_ = true;
  std::error_code ignored;
  if (linger_) linger_->cancel();
  if (flush_timer_) flush_timer_->cancel();
  end_setup();
  if (side_) side_->close(ignored);  // tells the peer
  if (cq_fd_) {
    cq_fd_->cancel(ignored);
    cq_fd_->release();  // the fd belongs to the completion queue
  }
  qp_.reset();
  cq_.reset();
  for (const auto& c : recv_chunks_) ctx_->pool().release(c);
  for (const auto& c : send_chunks_) ctx_->pool().release(c);
  const bool released = !recv_chunks_.empty() || !send_chunks_.empty();
  recv_chunks_.clear();
  send_chunks_.clear();
  if (released && trim_later) trim_when_idle(ctx_->weak_pool(), reactor_);
  // Handlers hold their connection, which holds this stream: drop them, or the pair leaks.
  // The connection is closed; nothing waits for them.
  read_handler_.reset();
  write_handler_.reset();
  if (auto done = std::move(on_closed_)) done();
}

}  // namespace corvid::rdma
