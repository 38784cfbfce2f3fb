#include "server_connection.hpp"

#include <algorithm>
#include <cstdio>

#include <asio/write.hpp>

#include "corvid/codec/codec.hpp"
#include "corvid/detail/buffer_range.hpp"
#include "corvid/server/request_context.hpp"

#include "server_core.hpp"

namespace corvid::detail {
namespace {
// Reads offer the kernel 4 KiB at first; each read that fills its room doubles it (up to
// max_read_room), so a busy connection takes many frames per recv.
constexpr std::size_t max_read_room = 256 * 1024;
}  // namespace

server_connection::server_connection(server_core& core,
                                     asio::generic::stream_protocol::socket socket,
                                     std::string peer)
    : core_(core),
      socket_(std::move(socket)),
      reactor_(static_cast<asio::io_context&>(socket_.get_executor().context())),
      peer_(std::move(peer)),
      read_buf_(core.config.read_buffer_size) {}

void server_connection::start() {
  if (core_.config.idle_timeout.count() > 0) {
    idle_timer_.emplace(reactor_);
    last_activity_ = std::chrono::steady_clock::now();
    arm_idle_timer();
  }
  read_more();
}

void server_connection::refuse(std::string reason) {
  fail(0, rpc_errc::server_busy, reason);
  flush();
}

void server_connection::arm_idle_timer() {
  // Fires at last activity + idle_timeout; activity since then just re-arms it.
  idle_timer_->expires_at(last_activity_ + core_.config.idle_timeout);
  idle_timer_->async_wait([self = std::static_pointer_cast<server_connection>(shared_from_this())](
                              const std::error_code& ec) {
    if (ec || self->closed_) return;
    const bool idle =
        std::chrono::steady_clock::now() >= self->last_activity_ + self->core_.config.idle_timeout;
    if (idle && self->in_flight_ == 0 && !self->writing_ && self->pending_.empty()) {
      self->close();
      return;
    }
    if (idle) self->last_activity_ = std::chrono::steady_clock::now();  // busy: from now
    self->arm_idle_timer();
  });
}

void server_connection::read_more() {
  if (closed_ || stop_reading_ || reading_) return;
  read_buf_.prepare_read(read_room_, 4096);
  reading_ = true;
  socket_.async_read_some(asio::buffer(read_buf_.tail(), read_buf_.tail_room()),
                          [self = std::static_pointer_cast<server_connection>(shared_from_this())](
                              const std::error_code& ec, std::size_t n) { self->on_read(ec, n); });
}

void server_connection::on_read(const std::error_code& ec, std::size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec) {
    // EOF: the peer will send nothing more but may still await replies (half-close).
    stop_reading_ = true;
    if (ec != asio::error::eof) {
      close();
      return;
    }
    close_if_done();
    return;
  }
  if (stop_reading_) {  // draining: requests that arrive now are not started
    close_if_done();
    return;
  }
  if (n == read_buf_.tail_room() && read_room_ < max_read_room) read_room_ *= 2;
  read_buf_.commit(n);
  core_.stats.on_read(n);
  read_time_ = std::chrono::steady_clock::now();  // deadlines count from arrival
  const bool ok = process_frames();
  if (idle_timer_) last_activity_ = std::chrono::steady_clock::now();  // after slow handlers
  flush();
  if (ok) read_more();
  close_if_done();
}

bool server_connection::process_frames() {
  dispatching_ = true;
  bool ok = true;
  std::uint64_t frames = 0;
  std::size_t largest = 0;
  while (read_buf_.size() >= protocol::header_size) {
    protocol::frame_header h;
    auto herr = protocol::decode_header(read_buf_.data(), h, core_.config.max_frame_size);
    if (herr == protocol::header_errc::too_large) {
      fail(h.request_id, rpc_errc::message_too_large,
           "frame of " + std::to_string(h.payload_size()) + " bytes exceeds the server limit of " +
               std::to_string(core_.config.max_frame_size));
      ok = false;
      break;
    }
    if (herr != protocol::header_errc::ok || h.type != protocol::msg_type::request) {
      fail(0, rpc_errc::protocol_error,
           herr != protocol::header_errc::ok ? std::string(protocol::to_string(herr))
                                             : std::string("expected a request frame"));
      ok = false;
      break;
    }
    if (read_buf_.size() < h.frame_size()) {
      // Make room for the whole frame now, so the next reads complete it without regrowing.
      read_buf_.ensure_tail(h.frame_size() - read_buf_.size());
      break;
    }
    dispatch(h, read_buf_.data() + protocol::header_size);
    read_buf_.consume(h.frame_size());
    ++frames;
    largest = std::max(largest, h.frame_size());
  }
  dispatching_ = false;
  core_.stats.on_frames_received(frames);
  // A buffer grown for big frames goes back to the system once a drained batch held none:
  // while big frames keep coming it stays, so each is read straight into it without
  // reallocating (and re-faulting megabytes of fresh pages) per frame.
  if (read_buf_.empty() && largest <= max_read_room) {
    read_buf_.shrink_to(std::max(core_.config.read_buffer_size, max_read_room));
  }
  return ok;
}

void server_connection::dispatch(const protocol::frame_header& h, const char* payload) {
  request_view req{h.request_id, h.function_id, std::string_view(payload, h.body_length),
                   std::string_view(payload + h.body_length, h.attachment_length)};
  if (h.timeout_ms != 0) {
    req.deadline = read_time_ + std::chrono::milliseconds(h.timeout_ms);
    // Requests queued behind slow work: the caller has given up, so don't run the handler.
    if (std::chrono::steady_clock::now() >= req.deadline) {
      reply_error(h.request_id, rpc_errc::timeout,
                  "deadline of " + std::to_string(h.timeout_ms) +
                      " ms passed before the handler could run");
      return;
    }
  }
  const handler_entry* entry = core_.find(h.function_id);
  if (entry == nullptr) {
    char msg[64];
    std::snprintf(msg, sizeof msg, "no handler registered for function id 0x%08x",
                  static_cast<unsigned>(h.function_id));
    reply_error(h.request_id, rpc_errc::function_not_found, msg);
    return;
  }
  entry->invoke(entry->object, *this, req);
}

outbound_queue& server_connection::begin_reply(std::uint64_t request_id) {
  reply_mark_ = pending_.mark();
  reply_id_ = request_id;
  reply_open_ = true;
  protocol::frame_header h;
  h.type = protocol::msg_type::response;
  h.request_id = request_id;
  protocol::encode_header(h, pending_.extend(protocol::header_size));
  return pending_;
}

void server_connection::end_reply(request_context* ctx) {
  const std::size_t body = pending_.mark() - reply_mark_ - protocol::header_size;
  const bool owned = ctx != nullptr && ctx->response_attachment_owned();
  const std::size_t attachment = ctx == nullptr ? 0
                                 : owned        ? ctx->owned_attachment_size()
                                                : ctx->response_attachment_view().size();
  if (body + attachment > core_.config.max_frame_size) {
    // Fail this call alone; a frame the peer must refuse would cost it the whole connection.
    reply_error(reply_id_, rpc_errc::message_too_large,
                "reply of " + std::to_string(body + attachment) + " bytes exceeds max_frame_size " +
                    std::to_string(core_.config.max_frame_size));
    return;
  }
  protocol::frame_header h;
  h.type = protocol::msg_type::response;
  h.request_id = reply_id_;
  h.body_length = static_cast<std::uint32_t>(body);
  h.attachment_length = static_cast<std::uint32_t>(attachment);
  if (owned) {
    pending_.append_owned(ctx->take_owned_attachment());
  } else if (ctx != nullptr) {
    pending_.append(ctx->response_attachment_view());
  }
  protocol::encode_header(h, pending_.at(reply_mark_));
  reply_open_ = false;
  frame_queued();
}

void server_connection::reply_error(std::uint64_t request_id, rpc_errc code,
                                    std::string_view message) {
  if (reply_open_) {  // an exception escaped half-way through encoding a reply
    pending_.rollback(reply_mark_);
    reply_open_ = false;
  }
  const std::size_t mark = pending_.mark();
  protocol::frame_header h;
  h.type = protocol::msg_type::response;
  h.status = code;
  h.request_id = request_id;
  pending_.extend(protocol::header_size);
  codec::encode(pending_, message);
  h.body_length = static_cast<std::uint32_t>(pending_.mark() - mark - protocol::header_size);
  protocol::encode_header(h, pending_.at(mark));  // after encoding: the buffer may have moved
  frame_queued();
}

void server_connection::frame_queued() {
  pending_.count_frame();
  if (closed_) {  // a coroutine handler finished after the connection went away
    pending_.clear();
    return;
  }
  if (!core_.config.coalesce_writes) {
    write_each();
    return;
  }
  // During dispatch the flush waits for the end of the batch: every reply to one recv
  // leaves in one write. Replies from coroutine handlers flush at once.
  if (!dispatching_) flush();
}

void server_connection::write_each() {
  // The seed-002 baseline: one blocking write syscall per reply, no batching at all.
  if (writing_ || closed_) return;
  std::error_code ec;
  std::uint64_t calls = 0;
  const std::size_t n =
      asio::write(socket_, buffer_range(pending_.buffers()), counting_transfer_all{&calls}, ec);
  core_.stats.on_write(pending_.frames(), calls, n);
  pending_.clear();
  if (ec) close();
}

void server_connection::call_started() noexcept {
  ++in_flight_;
  core_.handler_started();
}

void server_connection::call_finished() noexcept {
  --in_flight_;
  core_.handler_finished();
  close_if_done();
}

void server_connection::flush() {
  if (writing_ || closed_ || pending_.empty()) return;
  std::swap(pending_, sending_);
  writing_ = true;
  write_calls_ = 0;
  auto self = std::static_pointer_cast<server_connection>(shared_from_this());
  asio::async_write(socket_, buffer_range(sending_.buffers()), counting_transfer_all{&write_calls_},
                    [self](const std::error_code& ec, std::size_t n) { self->on_write(ec, n); });
}

void server_connection::on_write(const std::error_code& ec, std::size_t n) {
  writing_ = false;
  core_.stats.on_write(sending_.frames(), write_calls_, n);
  if (idle_timer_) last_activity_ = std::chrono::steady_clock::now();
  sending_.clear();
  if (ec) {
    close();
    return;
  }
  flush();
  close_if_done();
}

void server_connection::fail(std::uint64_t request_id, rpc_errc code, std::string_view message) {
  reply_error(request_id, code, message);
  stop_reading_ = true;
}

void server_connection::begin_drain() {
  stop_reading_ = true;
  close_if_done();
}

void server_connection::close_if_done() {
  if (closed_ || !stop_reading_) return;
  if (in_flight_ == 0 && !writing_ && pending_.empty()) close();
}

void server_connection::force_close() { close(); }

void server_connection::close() {
  if (closed_) return;
  closed_ = true;
  if (idle_timer_) idle_timer_->cancel();
  std::error_code ignored;
  socket_.shutdown(asio::socket_base::shutdown_both, ignored);
  socket_.close(ignored);
  core_.on_connection_closed(this);
}

}  // namespace corvid::detail
