// A server connection's replies, error replies, stream items and control frames, reserved
// and queued, and the write that carries them. docs/architecture.md, "Admission".
#include "reply_writer.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "corvid/codec/codec.hpp"
#include "corvid/server/request_context.hpp"

#include "../protocol/compression.hpp"
#include "../runtime/asio_all.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {
namespace {
// Error messages (a handler's what() included) are cut to this: an error frame is charged
// by force, so its size must be bounded.
constexpr std::size_t max_error_message = 4096;
}  // namespace

server_connection& reply_writer::conn() noexcept { return static_cast<server_connection&>(*this); }

void reply_writer::settle() noexcept { conn().mem().settle_replies(queued_bytes()); }

outbound_queue* reply_writer::begin_reply(std::uint64_t request_id, std::size_t frame_bytes) {
  // Reserved before it is encoded: a peer asking for big replies and not reading them must
  // not make the server hold more than its limits. Credit set aside for calls may be what is
  // missing: a reply comes before new calls.
  if (frame_bytes - protocol::header_size > conn().core_.config.max_frame_size ||
      !conn().mem().reserve_reply(frame_bytes, queued_bytes())) [[unlikely]] {
    if (!retry_reply(request_id, frame_bytes)) return nullptr;
  }
  mark_ = pending_.mark();
  id_ = request_id;
  open_ = true;
  // Room for the header, written by end_reply with the lengths (or rolled back by an error
  // reply if the encoding throws): nothing reads or sends it before that.
  pending_.extend(protocol::header_size);
  return &pending_;
}

bool reply_writer::retry_reply(std::uint64_t request_id, std::size_t frame_bytes) {
  connection_memory& mem = conn().mem();
  const std::size_t max_frame = conn().core_.config.max_frame_size;
  const std::size_t body = frame_bytes - protocol::header_size;
  if (body <= max_frame) {
    mem.release_credit();
    if (mem.reserve_reply(frame_bytes, queued_bytes())) return true;
  }
  if (body > max_frame) {
    // Fail this call alone; a frame the peer must refuse would cost it the whole connection.
    reply_error(request_id, rpc_errc::message_too_large,
                "reply of " + std::to_string(body) + " bytes exceeds max_frame_size " +
                    std::to_string(max_frame));
  } else if (!mem.reply_could_fit(frame_bytes)) {
    reply_error(request_id, rpc_errc::message_too_large,
                "reply of " + std::to_string(frame_bytes) +
                    " bytes exceeds the server's memory limit (" +
                    std::to_string(conn().core_.memory.server.limit()) + " bytes)");
  } else if (mem.replies_full(queued_bytes())) {
    reply_error(request_id, rpc_errc::server_busy,
                "reply not queued: " + std::to_string(queued_bytes()) +
                    " reply bytes already wait for this client to read them");
  } else {
    reply_error(request_id, rpc_errc::server_busy,
                "reply of " + std::to_string(frame_bytes) +
                    " bytes not queued: the server is at its memory limit");
  }
  return false;
}

[[gnu::always_inline]] inline void reply_writer::queue_reply(request_context* ctx,
                                                             std::uint8_t flags) {
  const std::size_t body = pending_.mark() - mark_ - protocol::header_size;
  using access = request_context_access;
  const bool owned = ctx != nullptr && access::attachment_owned(*ctx);
  const std::size_t attachment = ctx == nullptr ? 0 : access::attachment_size(*ctx);
  protocol::frame_header h = protocol::make_response(id_, static_cast<std::uint32_t>(body),
                                                     static_cast<std::uint32_t>(attachment));
  h.flags = flags;
  if (owned) {
    pending_.append_owned(access::take_owned_attachment(*ctx));
  } else if (ctx != nullptr) {
    pending_.append(access::attachment_view(*ctx));
  }
  protocol::encode_header(h, pending_.at(mark_));
  conn().metrics_.reply(conn().call_metrics(id_), protocol::header_size + body + attachment);
  open_ = false;
  frame_queued();
  if (observing_) [[unlikely]]
    conn().dispatch_.checks().ended(id_, rpc_errc::ok);
}

void reply_writer::end_reply(request_context* ctx, std::uint8_t flags) {
  // One test for a connection whose client did not ask for compression.
  if (reply_flags_ != 0) [[unlikely]] {
    end_negotiated_reply(ctx, flags);
    return;
  }
  queue_reply(ctx, flags);
}

void reply_writer::end_negotiated_reply(request_context* ctx, std::uint8_t flags) {
  const std::size_t body = pending_.mark() - mark_ - protocol::header_size;
  const std::size_t attachment = ctx == nullptr ? 0 : request_context_access::attachment_size(*ctx);
  if (body + attachment >= compress_from_ && compress_reply(ctx, flags, body, attachment)) return;
  queue_reply(ctx, flags | reply_flags_);
}

void reply_writer::peer_accepts_compressed() noexcept {
  const compression_config& cfg = conn().core_.config.compression;
  if (!cfg.enabled || reply_flags_ != 0) return;
  reply_flags_ = protocol::flag_accepts_compressed;
  compress_from_ = std::max<std::size_t>(cfg.min_bytes, protocol::compressed_head_size + 1);
}

bool reply_writer::compress_reply(request_context* ctx, std::uint8_t flags, std::size_t body,
                                  std::size_t attachment) {
  using access = request_context_access;
  // The compressed copy is charged before it is made, as the reply was; refused, the reply
  // goes as it is.
  if (!conn().mem().reserve_reply(protocol::deflate_bound(body + attachment), queued_bytes()))
    return false;
  const std::string_view plain_body(pending_.at(mark_ + protocol::header_size), body);
  std::string_view plain_attachment;
  if (ctx != nullptr) {
    plain_attachment = access::attachment_owned(*ctx) ? access::owned_attachment_view(*ctx)
                                                      : access::attachment_view(*ctx);
  }
  std::string packed;
  try {
    if (!protocol::deflate(plain_body, plain_attachment, conn().core_.config.compression.level,
                           packed))
      return false;  // it would not be smaller
  } catch (const std::bad_alloc&) {
    return false;
  }
  if (ctx != nullptr && access::attachment_owned(*ctx)) (void)access::take_owned_attachment(*ctx);
  pending_.rollback(mark_ + protocol::header_size);
  pending_.append(packed);
  protocol::frame_header h =
      protocol::make_response(id_, static_cast<std::uint32_t>(packed.size()), 0);
  h.flags = flags | reply_flags_ | protocol::flag_compressed;
  protocol::encode_header(h, pending_.at(mark_));
  conn().metrics_.reply(conn().call_metrics(id_), protocol::header_size + packed.size());
  open_ = false;
  frame_queued();
  if (observing_) [[unlikely]]
    conn().dispatch_.checks().ended(id_, rpc_errc::ok);
  return true;
}

void reply_writer::reply_error(std::uint64_t request_id, rpc_errc code, std::string_view message) {
  metrics::call_recorder::error(conn().call_metrics(request_id), code);
  if (request_context* rc = conn().running_.find(request_id);
      rc != nullptr && rc->trace() != nullptr)
    request_context_access::span(*rc)->status = code;  // a traced call's span tells its end
  if (open_) {  // an exception escaped half-way through encoding a reply
    pending_.rollback(mark_);
    open_ = false;
  }
  message = message.substr(0, max_error_message);
  const std::size_t mark = pending_.mark();
  pending_.extend(protocol::header_size);
  codec::encode(pending_, message);
  const auto body = static_cast<std::uint32_t>(pending_.mark() - mark - protocol::header_size);
  // After encoding: the buffer may have moved.
  protocol::encode_header(protocol::make_error(request_id, code, body), pending_.at(mark));
  frame_queued();
  if (observing_) [[unlikely]]
    conn().dispatch_.checks().ended(request_id, code);
}

outbound_queue* reply_writer::begin_item(std::uint64_t request_id, std::size_t frame_bytes) {
  const std::size_t body = frame_bytes - protocol::header_size;
  if (body > conn().core_.config.max_frame_size) {
    throw std::length_error("stream item of " + std::to_string(body) +
                            " bytes exceeds max_frame_size " +
                            std::to_string(conn().core_.config.max_frame_size));
  }
  // Reserved like a reply. Refused, the stream waits for the queue to drain — unless nothing
  // is queued or being written, when no drain would come: then the server itself has no
  // memory for it, and the item fails like a reply would (it is never queued uncharged).
  connection_memory& mem = conn().mem();
  if (!mem.reserve_reply(frame_bytes, queued_bytes())) {
    mem.release_credit();
    if (!mem.reserve_reply(frame_bytes, queued_bytes())) {
      if (!idle()) return nullptr;
      throw std::runtime_error("stream item of " + std::to_string(body) +
                               " bytes not queued: the server is at its memory limit");
    }
  }
  mark_ = pending_.mark();
  id_ = request_id;
  open_ = true;
  pending_.extend(protocol::header_size);
  return &pending_;
}

void reply_writer::end_item(std::size_t owned_bytes) {
  const auto body =
      static_cast<std::uint32_t>(pending_.mark() - mark_ - protocol::header_size + owned_bytes);
  protocol::frame_header h = protocol::make_item(id_, body);
  // Items the queue holds whole (not moved or lent in as their own segment) are compressed
  // like replies.
  if (reply_flags_ != 0 && owned_bytes == 0 && body >= compress_from_) [[unlikely]] {
    std::string packed;
    try {
      if (conn().mem().reserve_reply(protocol::deflate_bound(body), queued_bytes()) &&
          protocol::deflate(std::string_view(pending_.at(mark_ + protocol::header_size), body), {},
                            conn().core_.config.compression.level, packed)) {
        pending_.rollback(mark_ + protocol::header_size);
        pending_.append(packed);
        h.body_length = static_cast<std::uint32_t>(packed.size());
        h.flags = protocol::flag_compressed;
      }
    } catch (const std::bad_alloc&) {
      // sent as it is
    }
  }
  protocol::encode_header(h, pending_.at(mark_));
  open_ = false;
  frame_queued();
}

void reply_writer::queue_control(const protocol::frame_header& h) {
  if (conn().gate_.closed()) return;
  append_header_frame(pending_, h);
  if (!conn().gate_.in_batch()) flush();
}

void reply_writer::frame_queued() {
  pending_.count_frame();
  if (conn().gate_.closed()) {  // a coroutine handler finished after the connection went away
    pending_.clear();
    return;
  }
  if (!conn().core_.config.coalesce_writes) {
    write_each();
    return;
  }
  // During dispatch the flush waits for the end of the batch: every reply to one recv
  // leaves in one write. Replies from coroutine handlers flush at once.
  if (!conn().gate_.in_batch()) {
    flush();
    settle();
  }
}

void reply_writer::write_each() {
  // coalesce_writes off, the baseline it is measured against: one blocking write syscall
  // per reply, no batching at all.
  if (writing_ || conn().gate_.closed()) return;
  std::error_code ec;
  std::uint64_t calls = 0;
  std::size_t n = 0;
  // One per reactor thread, not per connection: the write is blocking, so it is free again
  // when it returns.
  thread_local std::vector<asio::const_buffer> iov;
  pending_.gather(iov);
  if (conn().setup_.switching() || !conn().stream_.write_blocking(iov, &calls, n, ec)) {
    flush();  // RDMA writes complete asynchronously: one frame per flush
    return;
  }
  conn().core_.stats.on_write(pending_.frames(), calls, n);
  conn().metrics_.sent(n);
  pending_.clear();
  if (ec) conn().close();
}

void reply_writer::flush(time_point now) {
  if (writing_ || conn().gate_.closed() || pending_.empty()) return;
  frame_stream& frames = conn().frames_;
  std::swap(pending_, frames.sending());
  conn().streams_.write_started();
  writing_ = true;
  if (conn().core_.config.write_timeout.count() > 0) {
    conn().watch_.live.write_moved = now != time_point{} ? now : std::chrono::steady_clock::now();
    // Big replies are what a peer that stops reading leaves behind: known to the memory
    // waiters, they are reclaimed (the connection closed) if they stop moving.
    if (frames.sending().size() >= 64 * 1024) hold();
  }
  frames.write(conn().stream_, &conn().watch_.live.write_moved,
               [self = conn().self()](const std::error_code& ec, std::size_t n) {
                 self->writer().on_write(ec, n);
               });
}

void reply_writer::on_write(const std::error_code& ec, std::size_t n) {
  writing_ = false;
  conn().frames_.end_write(n, conn().core_.stats);
  conn().streams_.write_done();  // their borrowed items are no longer referenced
  conn().metrics_.sent(n);
  if (ec) {
    conn().close();
    return;
  }
  conn().on_written();
}

void reply_writer::hold() {
  if (holding_ || conn().core_.config.write_timeout.count() == 0) return;
  holding_ = true;
  std::weak_ptr<server_connection> weak = conn().self();
  conn().core_.memory.add_holder(&holding_, [weak] {
    if (auto c = weak.lock()) asio::post(c->reactor_, [c] { c->writer().reclaim(); });
  });
}

void reply_writer::reclaim() {
  holding_ = false;
  if (conn().gate_.closed() || !writing_) return;
  connection_liveness& live = conn().watch_.live;
  const time_point now = std::chrono::steady_clock::now();
  if (live.write_stalled_for(live.stall_grace(), writing_, now)) {
    conn().core_.stats.on_dead_peer();
    conn().close();  // others wait for memory this peer's unread replies hold
    return;
  }
  // Moving, or not stalled long enough yet: look again when it would be, and stay known to
  // the next waiter.
  conn().watch_.recheck_at(live.write_moved + live.stall_grace());
  hold();
}

void reply_writer::closed() {
  if (holding_) conn().core_.memory.remove_holder(&holding_);
}

}  // namespace corvid::detail
