#include "client_connection.hpp"

#include <exception>
#include <new>
#include <optional>
#include <stdexcept>

#include "corvid/codec/sink.hpp"
#include "corvid/detail/buffer_range.hpp"
#include "corvid/detail/recycled_handler.hpp"
#include "corvid/runtime/io_pool.hpp"

#include "../protocol/metadata_block.hpp"
#include "../protocol/trace_prefix.hpp"
#include "../runtime/asio_all.hpp"
#include "../runtime/endpoint.hpp"
#include "../transport/byte_stream.hpp"
#include "../transport/tls_context.hpp"
#include "client_metrics_access.hpp"
#include "rdma_client_handshake.hpp"
#include <sys/socket.h>

namespace corvid::detail {
namespace {
constexpr std::size_t idle_read_buffer = 8 * 1024;

// Why `what` (a request, a stream item) could not be encoded, from the exception in flight:
// no memory for it, a string or container longer than the wire can say (UINT32_MAX elements),
// or a value the codec refuses (a valueless variant).
rpc_error encode_failure(std::string_view what) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return {rpc_errc::message_too_large, "out of memory encoding " + std::string(what)};
  } catch (const std::length_error& e) {
    return {rpc_errc::message_too_large, std::string(what) + " cannot be encoded: " + e.what()};
  } catch (const std::exception& e) {
    return {rpc_errc::invalid_argument, std::string(what) + " cannot be encoded: " + e.what()};
  } catch (...) {
    return {rpc_errc::invalid_argument, std::string(what) + " cannot be encoded"};
  }
}
}  // namespace

std::string undecodable_reply_message(std::string_view why) {
  return "reply does not decode as the function's return type (" + std::string(why) + ")";
}

client_connection::client_connection(asio::io_context& reactor, const client_config& config)
    : reactor_(reactor),
      config_(config),
      resolver_(reactor),
      connect_timer_(reactor),
      deadline_timer_(reactor),
      heartbeat_timer_(reactor),
      frames_(idle_read_buffer),
      metrics_(client_metrics_access::registry(config.metrics)),
      request_flags_(config.compression.enabled ? protocol::flag_accepts_compressed : 0) {}

client_connection::~client_connection() {
  // close() and connect() end every call via fail_all on the reactor, which holds a reference
  // meanwhile. Calls are still here only when that reactor stopped first (its io_pool stopped
  // or destroyed, the process exiting) and dropped the posted close: end them here, so that no
  // caller waits forever and no call record leaks. The write in flight, if any, was dropped
  // with its handler: its pins go too.
  const rpc_error e(rpc_errc::connection_closed, "the client's reactor stopped");
  held_calls held = take_held(e);
  unpin(held.never_sent);
  unpin(pinned_sending_);
  end_held(held, e);
}

void client_connection::reject(std::unique_lock<std::mutex>& lk, call_base* call,
                               rpc_error e) noexcept {
  metrics::client_recorder::refused(slot_of(*call), e.code());
  lk.unlock();
  call->set_error(std::move(e));
  call->complete();
  call->release();
}

rpc_error client_connection::too_large(std::size_t bytes) const {
  return {rpc_errc::message_too_large, "request of " + std::to_string(bytes) +
                                           " bytes exceeds max_frame_size " +
                                           std::to_string(config_.max_frame_size)};
}

std::uint32_t client_connection::wire_timeout(std::chrono::milliseconds timeout) noexcept {
  return static_cast<std::uint32_t>(std::min<std::chrono::milliseconds::rep>(
      std::max<std::chrono::milliseconds::rep>(timeout.count(), 0), UINT32_MAX));
}

std::string client_connection::closed_reason_or_default() const {
  return closed_reason_.empty() ? std::string("not connected") : closed_reason_;
}

// ---- connect / close ------------------------------------------------------------------

struct client_connection::connect_attempt {
  std::uint64_t epoch = 0;
  std::string host;
  std::string port;
  std::shared_ptr<rdma::rdma_context> rdma;
  std::shared_ptr<asio::ssl::context> tls;
  std::string server_name;
  bool timed_out = false;
  std::function<void(rpc_error)> done;
  std::string endpoint() const { return port.empty() ? host : host + ":" + port; }
};

void client_connection::connect(std::string host, std::string port,
                                std::function<void(rpc_error)> done) {
  asio::post(reactor_, [self = shared_from_this(), host = std::move(host), port = std::move(port),
                        done = std::move(done)]() mutable {
    if (self->stream_ && self->stream_->is_open()) {
      self->fail_all({rpc_errc::connection_closed, "reconnecting"});
    }
    auto a = std::make_shared<connect_attempt>();
    a->host = std::move(host);
    a->port = std::move(port);
    a->done = [c = self.get(), done = std::move(done)](rpc_error e) {
      c->metrics_.connected(!e);  // on the reactor, which holds the connection
      done(std::move(e));
    };
    {
      std::lock_guard lk(self->mutex_);
      if (!self->tls_ctx_ && self->config_.tls) {
        auto ctx = make_tls_context(*self->config_.tls, tls_role::client);
        if (!ctx) {
          a->done(std::move(ctx).error());
          return;
        }
        self->tls_ctx_ = std::move(*ctx);
        self->tls_server_name_ = self->config_.tls->server_name;
      }
      a->rdma = self->rdma_ctx_;
      a->tls = self->tls_ctx_;
      a->server_name = self->tls_server_name_;
    }
    a->epoch = ++self->epoch_;
    auto stream = self->stream_ = std::make_shared<byte_stream>(self->reactor_);
    self->connect_timer_.expires_after(self->config_.connect_timeout);
    self->connect_timer_.async_wait([self, a, stream](const std::error_code& ec) {
      if (ec || a->epoch != self->epoch_) return;
      a->timed_out = true;
      self->resolver_.cancel();
      std::error_code ignored;
      stream->socket().close(ignored);  // a handshake on it ends too
    });
    if (is_unix_endpoint(a->host)) {
      stream->socket().async_connect(unix_endpoint(a->host), [self, a](const std::error_code& e) {
        self->on_socket_connected(a, e, "cannot connect to");
      });
      return;
    }
    self->resolver_.async_resolve(
        a->host, a->port,
        [self, a, stream](const std::error_code& ec,
                          asio::ip::tcp::resolver::results_type results) mutable {
          if (ec) {
            self->on_socket_connected(a, ec, "cannot resolve");
            return;
          }
          std::vector<asio::generic::stream_protocol::endpoint> endpoints;
          for (const auto& entry : results) endpoints.emplace_back(entry.endpoint());
          asio::async_connect(
              stream->socket(), endpoints,
              [self, a](const std::error_code& e, const asio::generic::stream_protocol::endpoint&) {
                self->on_socket_connected(a, e, "cannot connect to");
              });
        });
  });
}

void client_connection::on_socket_connected(const std::shared_ptr<connect_attempt>& a,
                                            const std::error_code& ec, std::string_view what) {
  const bool current = a->epoch == epoch_;
  const bool handshake = (a->rdma || a->tls) && !ec && !a->timed_out && current;
  if (!handshake) connect_timer_.cancel();  // else it also bounds the handshake
  if (!current) {
    a->done({rpc_errc::connect_failed, "superseded by a newer connect()"});
  } else if (a->timed_out) {
    a->done({rpc_errc::timeout, "connect to " + a->endpoint() + " timed out after " +
                                    std::to_string(config_.connect_timeout.count()) + " ms"});
  } else if (ec) {
    stream_->close();
    a->done(
        {rpc_errc::connect_failed, std::string(what) + " " + a->endpoint() + ": " + ec.message()});
  } else if (a->tls) {
    tls_handshake(a);
  } else if (a->rdma) {
    rdma_handshake(a);
  } else {
    on_connected(a->epoch);
    a->done({});
  }
}

bool client_connection::attempt_current(const connect_attempt& a, std::string_view stage) {
  if (a.epoch != epoch_) {
    a.done({rpc_errc::connect_failed, "superseded by a newer connect()"});
    return false;
  }
  if (a.timed_out) {
    a.done({rpc_errc::timeout, "connect to " + a.endpoint() + " timed out after " +
                                   std::to_string(config_.connect_timeout.count()) + " ms (" +
                                   std::string(stage) + ")"});
    return false;
  }
  return true;
}

void client_connection::tls_handshake(std::shared_ptr<connect_attempt> a) {
  std::error_code ignored;
  stream_->socket().set_option(asio::ip::tcp::no_delay(true), ignored);  // not on unix sockets
  stream_->start_tls(a->tls, false);
  expect_server_name(stream_->tls().native_handle(),
                     a->server_name.empty() ? a->host : a->server_name);
  stream_->tls().async_handshake(
      [self = shared_from_this(), a, stream = stream_](const std::error_code& ec) {
        const bool rdma_next = a->rdma && !ec;
        if (!rdma_next) self->connect_timer_.cancel();  // else it also bounds the RDMA setup
        if (!self->attempt_current(*a, "TLS handshake")) {
          stream->close();
          return;
        }
        if (ec) {
          const std::string why = describe_tls_failure(ec, stream->tls_verify_result());
          stream->close();
          a->done({rpc_errc::connect_failed,
                   "TLS handshake with " + a->endpoint() + " failed: " + why});
          return;
        }
        if (rdma_next) {
          self->rdma_handshake(a);  // the server verified; the setup runs over TLS
          return;
        }
        self->on_connected(a->epoch);
        a->done({});
      });
}

void client_connection::rdma_handshake(std::shared_ptr<connect_attempt> a) {
  std::error_code ignored;
  stream_->socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  rdma::client_handshake(a->rdma, *stream_, &stats_,
                         [self = shared_from_this(), a, stream = stream_](
                             rpc_error e, std::shared_ptr<rdma::rdma_stream> rdma) {
                           self->connect_timer_.cancel();
                           if (!self->attempt_current(*a, "RDMA setup")) {
                             if (rdma) rdma->close();
                             return;
                           }
                           if (e) {
                             stream->close();
                             a->done(std::move(e));
                             return;
                           }
                           stream->switch_to_rdma(std::move(rdma));
                           self->on_connected(a->epoch);
                           a->done({});
                         });
}

void client_connection::on_connected(std::uint64_t epoch) {
  std::error_code ignored;
  stream_->socket().set_option(asio::ip::tcp::no_delay(true), ignored);  // not on unix sockets
  server_reactors_.store(0, std::memory_order_relaxed);  // this server states it anew
  bool kick = false;
  {
    std::lock_guard lk(mutex_);
    open_.store(true, std::memory_order_release);
    compress_from_ = static_cast<std::size_t>(-1);  // this server has not said it accepts any
    closed_reason_.clear();
    if (config_.ask_server_reactors) {
      // A ping first: the server's pong states its reactor count (docs/protocol.md, "Control
      // frames"). Not a heartbeat, so not counted in pings_sent.
      append_header_frame(pending_, protocol::make_ping(0));
      kick = schedule_flush_locked();
    }
  }
  metrics_.set_open(true);
  frames_.clock.restart(std::chrono::steady_clock::now());
  arm_heartbeat(epoch);
  read_more(epoch);
  if (kick) flush();
}

void client_connection::close(std::string reason) {
  {
    std::lock_guard lk(mutex_);
    open_.store(false, std::memory_order_release);
    closed_reason_ = reason;
  }
  asio::post(reactor_, [self = shared_from_this(), reason = std::move(reason)]() mutable {
    self->send_cancels_before_close();
    self->fail_all({rpc_errc::connection_closed, std::move(reason)});
  });
}

void client_connection::send_cancels_before_close() {
  // Best effort, with one non-blocking send: a caller closing the client gives up on every
  // pending call, so coroutine handlers still working for it should stop. (The server
  // cannot tell a close from a half-close, after which a peer may still read replies.)
  // Skipped while a write is in flight: our bytes must not land inside its frames.
  // Only on a plain socket: a TLS stream's bytes cannot be sent around it.
  if (!config_.send_cancel || !stream_ || stream_->carrier() != byte_stream::kind::socket ||
      !stream_->is_open()) {
    return;
  }
  std::string frames;
  {
    std::lock_guard lk(mutex_);
    if (writing_) return;
    calls_.for_each([&](const call_base* call) {
      if (slot_of(*call).seq > written_seq_) return;  // never sent: no cancel
      frames.resize(frames.size() + protocol::header_size);
      protocol::encode_header(protocol::make_cancel(slot_of(*call).id),
                              frames.data() + frames.size() - protocol::header_size);
    });
  }
  if (frames.empty()) return;
  // A partial send leaves a partial frame before our FIN, which the server discards.
  const ssize_t n = ::send(stream_->socket().native_handle(), frames.data(), frames.size(),
                           MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n > 0) {
    stats_.on_write(0, 1, static_cast<std::uint64_t>(n));
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) / protocol::header_size; ++i) {
      stats_.on_cancelled();
    }
  }
}

void client_connection::finish_call(call_base* call, bool deferred) noexcept {
  if (!deferred) call->complete();
  call->release();
}

void client_connection::unpin(std::vector<call_base*>& pins) {
  // Detach the list first: resuming a caller can queue and flush a new request inline,
  // which refills `pins` while we are still walking it.
  std::vector<call_base*> done = std::exchange(pins, {});
  std::vector<call_base*> ready;
  {
    std::lock_guard lk(mutex_);
    for (call_base* c : done) {
      call_slot& s = slot_of(*c);
      s.pinned = false;
      if (s.completion_deferred) ready.push_back(c);
    }
  }
  for (call_base* c : ready) c->complete();
  for (call_base* c : done) c->release();
  done.clear();
  if (pins.empty()) pins.swap(done);  // keep the capacity: no allocation per write
}

void client_connection::fail_all(rpc_error e) {
  held_calls held = take_held(e);
  metrics_.set_open(false);
  unpin(held.never_sent);
  // A write in flight ends with an error; its pins release then.
  if (stream_) stream_->close();
  connect_timer_.cancel();
  deadline_timer_.cancel();
  heartbeat_timer_.cancel();
  timer_armed_for_ = std::chrono::steady_clock::time_point::max();
  frames_.reset_reading(idle_read_buffer);
  end_held(held, e);
}

client_connection::held_calls client_connection::take_held(const rpc_error& e) {
  held_calls held;
  std::lock_guard lk(mutex_);
  held.never_sent.swap(pinned_pending_);  // their bytes leave with pending_ below, unwritten
  open_.store(false, std::memory_order_release);
  if (closed_reason_.empty()) closed_reason_ = e.message();
  const auto now = std::chrono::steady_clock::now();
  calls_.take_all([&](call_base* call) {
    metrics::client_recorder::ended(slot_of(*call), e.code(), 0, now);
    held.filed.push_back(call);
  });
  deadlines_.clear();  // the calls' links are reset in end_held
  pending_.clear();
  while (auto p = parked_.pop_front()) {
    metrics::client_recorder::ended(slot_of(*p->call), e.code(), 0, now);
    held.parked.push_back(p->call);
  }
  return held;
}

void client_connection::end_held(held_calls& held, const rpc_error& e) {
  std::uint64_t written;
  {
    std::lock_guard lk(mutex_);
    written = written_seq_;
  }
  for (call_base* c : held.filed) {
    call_slot& s = slot_of(*c);
    s.prev = s.next = nullptr;
    bool deferred;
    {
      std::lock_guard lk(mutex_);
      deferred = s.completion_deferred = s.pinned;
    }
    if (s.seq > written) {  // its bytes were still in pending_: the server never saw it
      c->set_error(rpc_error::unsent(e.code(), e.message() + " (request not sent)"));
    } else {
      c->set_error(e);
    }
    finish_call(c, deferred);
  }
  for (call_base* c : held.parked) {
    call_slot& s = slot_of(*c);
    s.prev = s.next = nullptr;
    s.timed = false;
    c->set_error(rpc_error::unsent(e.code(), e.message() + " (request not sent)"));
    c->admit();
    finish_call(c, false);
  }
}

// ---- submitting ------------------------------------------------------------------------

void client_connection::submit(call_base* call, std::uint32_t function_id, std::string_view name,
                               std::uint16_t signature, std::string_view attachment,
                               std::chrono::milliseconds timeout, const request_encoder& encode) {
  submit_impl(call, function_id, name, signature, attachment, timeout, encode, nullptr, true);
}

void client_connection::submit_with_metadata(call_base* call, std::uint32_t function_id,
                                             std::string_view name, std::uint16_t signature,
                                             std::string_view attachment,
                                             std::chrono::milliseconds timeout,
                                             const request_encoder& encode, const metadata* md,
                                             bool compress) {
  // Empty: no block, no flag, the request is what it was without metadata.
  if (md != nullptr && md->empty()) md = nullptr;
  submit_impl(call, function_id, name, signature, attachment, timeout, encode, md, compress);
}

// Both entries' body, inlined into each: in submit() `md` is a constant null and `compress`
// true, so a call without metadata tests nothing for them.
[[gnu::always_inline]] inline void client_connection::submit_impl(
    call_base* call, std::uint32_t function_id, std::string_view name, std::uint16_t signature,
    std::string_view attachment, std::chrono::milliseconds timeout, const request_encoder& encode,
    const metadata* md, bool compress) {
  // The header's flags, computed where they are used (a value kept across the lock costs a
  // register spill per call).
  std::uint8_t packed = 0;  // flag_compressed once compress_locked has compressed it
  auto flags = [&]() __attribute__((always_inline)) {
    return static_cast<std::uint8_t>((call->trace() ? protocol::flag_trace : 0) |
                                     (md != nullptr ? protocol::flag_metadata : 0) |
                                     request_flags_ | packed);
  };
  std::unique_lock lk(mutex_);
  // One clock read for the deadline and the metrics' start.
  const auto now = timeout.count() > 0 || metrics_.on() ? std::chrono::steady_clock::now()
                                                        : std::chrono::steady_clock::time_point{};
  metrics_.submitted(slot_of(*call), function_id, name, now);
  if (!open_locked()) {
    reject(lk, call, rpc_error::unsent(rpc_errc::connection_closed, closed_reason_or_default()));
    return;
  }
  if (!parked_.empty() || !has_room_locked(attachment.size())) {  // FIFO: none overtakes
    if (config_.when_busy == client_config::busy_policy::fail) {
      reject(lk, call,
             rpc_error::unsent(rpc_errc::client_busy,
                               "client at its limit of calls in flight or queued bytes"));
      return;
    }
    std::unique_ptr<parked_request> p;
    std::size_t body = 0;
    try {
      p = std::make_unique<parked_request>();
      p->frame.resize(protocol::header_size);
      if (call->trace()) [[unlikely]] {
        p->frame.resize(protocol::header_size + protocol::trace_prefix_size);
        protocol::encode_trace_prefix(*call->trace(), p->frame.data() + protocol::header_size);
      }
      if (md != nullptr) [[unlikely]] {
        const std::size_t at = p->frame.size();
        p->frame.resize(at + protocol::metadata_wire_size(*md));
        protocol::encode_metadata(*md, p->frame.data() + at);
      }
      codec::string_sink sink(p->frame);
      encode.to_string(encode.args, sink);
      body = p->frame.size() - protocol::header_size;
      if (compress && body + attachment.size() <= config_.max_frame_size &&
          body + attachment.size() >= compress_from_) [[unlikely]] {
        if (compress_parked(*p, attachment)) {  // the attachment is inside
          packed = protocol::flag_compressed;
          attachment = {};
          body = p->frame.size() - protocol::header_size;
        }
      }
      if (body + attachment.size() <= config_.max_frame_size) {
        if (borrows(attachment.size())) {
          p->borrowed = attachment;
        } else {
          p->frame.append(attachment);
        }
      }
    } catch (...) {
      reject(lk, call, encode_failure("the request"));
      return;
    }
    if (body + attachment.size() > config_.max_frame_size) {
      reject(lk, call, too_large(body + attachment.size()));
      return;
    }
    // Its id and remaining timeout are known once it is admitted (admit_parked_locked).
    p->request = {.function_id = function_id,
                  .signature = signature,
                  .body = static_cast<std::uint32_t>(body),
                  .attachment = static_cast<std::uint32_t>(attachment.size()),
                  .flags = flags()};
    metrics::client_recorder::queued(slot_of(*call), body + attachment.size());
    park_locked(call, std::move(p), timeout, now);
    const bool rearm = slot_of(*call).timed && deadlines_.head() == call;
    lk.unlock();
    after_submit(false, rearm);
    return;
  }
  const std::size_t mark = pending_.mark();
  pending_.extend(protocol::header_size);  // filled in below, once the lengths are known
  if (call->trace()) [[unlikely]]
    protocol::encode_trace_prefix(*call->trace(), pending_.extend(protocol::trace_prefix_size));
  try {
    if (md != nullptr) [[unlikely]]  // may be large: its memory may run out, as the arguments'
      protocol::encode_metadata(*md, pending_.extend(protocol::metadata_wire_size(*md)));
    encode.to_queue(encode.args, pending_);
  } catch (...) {
    pending_.rollback(mark);
    reject(lk, call, encode_failure("the request"));
    return;
  }
  std::size_t body = pending_.mark() - mark - protocol::header_size;
  if (body + attachment.size() > config_.max_frame_size) {
    pending_.rollback(mark);
    reject(lk, call, too_large(body + attachment.size()));
    return;
  }
  if (compress && body + attachment.size() >= compress_from_) [[unlikely]]
    packed = compress_locked(mark, body, attachment);
  if (borrows(attachment.size())) {
    append_borrowed_locked(call, attachment);
  } else {
    pending_.append(attachment);
  }
  register_call(call, timeout, now);
  metrics::client_recorder::queued(slot_of(*call), body + attachment.size());
  // The deadline travels with the request, so the server can skip work nobody awaits.
  const protocol::frame_header h =
      protocol::make_request({.id = slot_of(*call).id,
                              .function_id = function_id,
                              .signature = signature,
                              .body = static_cast<std::uint32_t>(body),
                              .attachment = static_cast<std::uint32_t>(attachment.size()),
                              .timeout_ms = wire_timeout(timeout),
                              .flags = flags()});
  protocol::encode_header(h, pending_.at(mark));  // after encoding: the buffer may have moved
  pending_.count_frame();
  if (slot_of(*call).extra_credit != 0) [[unlikely]]
    queue_extra_credit_locked(call);
  const bool kick = schedule_flush_locked();
  const bool rearm = slot_of(*call).timed && deadlines_.head() == call;
  lk.unlock();
  after_submit(kick, rearm);
}

// ---- pending-call table and deadlines (under mutex_) ------------------------------------

// Inlined into both of submit_impl's copies, as it was into the one submit() before them.
[[gnu::always_inline]] inline void client_connection::register_call(
    call_base* call, std::chrono::milliseconds timeout, std::chrono::steady_clock::time_point now) {
  file_call(call);
  add_deadline(call, timeout, now);
}

void client_connection::file_call(call_base* call) {
  calls_.insert(call);
  slot_of(*call).seq = ++submit_seq_;
}

void client_connection::add_deadline(call_base* call, std::chrono::milliseconds timeout,
                                     std::chrono::steady_clock::time_point now) {
  slot_of(*call).timed = timeout.count() > 0;
  if (slot_of(*call).timed) deadlines_.insert(call, now + timeout);
}

call_base* client_connection::take_call(std::uint64_t id) {
  call_base* call = calls_.take(id);  // a late duplicate of this id no longer matches
  if (call != nullptr) deadlines_.unlink(call);
  return call;
}

// ---- caps and parked requests (under mutex_) ---------------------------------------------

void client_connection::append_borrowed_locked(call_base* call, std::string_view attachment) {
  pending_.append_borrowed(attachment);
  slot_of(*call).pinned = true;
  call->add_ref();  // the pin's own reference, dropped when the write is done
  pinned_pending_.push_back(call);
}

bool client_connection::has_room_locked(std::size_t bytes) const noexcept {
  if (config_.max_pending_calls != 0 && calls_.size() >= config_.max_pending_calls) {
    return false;
  }
  return config_.max_queued_request_bytes == 0 || pending_.empty() ||
         pending_.size() + bytes <= config_.max_queued_request_bytes;
}

void client_connection::park_locked(call_base* call, std::unique_ptr<parked_request> p,
                                    std::chrono::milliseconds timeout,
                                    std::chrono::steady_clock::time_point now) {
  p->call = call;
  call->mark_parked();
  add_deadline(call, timeout, now);  // the wait counts against the call's deadline
  parked_.push_back(std::move(p));
  stats_.on_waited();
}

void client_connection::admit_parked_locked(std::vector<call_base*>& admitted) {
  // Requests this large are queued as their own segment (moved, not copied) when written
  // with a gather write.
  constexpr std::size_t own_segment = 16 * 1024;
  const auto now = std::chrono::steady_clock::now();
  while (!parked_.empty() &&
         has_room_locked(parked_.front()->frame.size() + parked_.front()->borrowed.size())) {
    std::unique_ptr<parked_request> p = parked_.pop_front();
    call_base* call = p->call;
    const call_slot& slot = slot_of(*call);
    file_call(call);
    p->request.id = slot.id;
    p->request.timeout_ms =
        slot.timed
            ? std::max<std::uint32_t>(
                  1,
                  wire_timeout(std::chrono::ceil<std::chrono::milliseconds>(slot.deadline - now)))
            : 0;
    protocol::encode_header(protocol::make_request(p->request), p->frame.data());
    if (config_.coalesce_writes && p->frame.size() >= own_segment) {
      pending_.append_owned(std::move(p->frame));
    } else {
      pending_.append(p->frame);
    }
    if (!p->borrowed.empty()) append_borrowed_locked(call, p->borrowed);
    pending_.count_frame();
    if (slot.extra_credit != 0) queue_extra_credit_locked(call);
    admitted.push_back(call);
  }
}

// ---- writing --------------------------------------------------------------------------

bool client_connection::schedule_flush_locked() {
  if (writing_ || flush_scheduled_) return false;
  flush_scheduled_ = true;
  return true;
}

void client_connection::kick_flush() {
  if (current_reactor() == &reactor_) {
    // Requests made by coroutines resumed while dispatching replies leave together at the
    // end of the batch.
    if (!dispatching_) flush();
    return;
  }
  asio::post(reactor_, recycled([self = shared_from_this()] { self->flush(); }));
}

void client_connection::after_submit(bool kick, bool rearm) {
  if (kick) {
    kick_flush();  // flush() rearms the timer
  } else if (rearm) {
    asio::post(reactor_, recycled([self = shared_from_this()] { self->rearm_timer(); }));
  }
}

void client_connection::flush() {
  bool start = false;
  std::vector<call_base*> admitted;  // allocates only when parked calls get room
  {
    std::lock_guard lk(mutex_);
    flush_scheduled_ = false;
    // Replies and writes since the last flush may have made room for parked requests.
    if (open_locked() && !parked_.empty()) admit_parked_locked(admitted);
    if (!writing_ && open_locked() && !pending_.empty()) {
      // Conservative in the one-frame-per-write mode: everything queued counts as written.
      written_seq_ = submit_seq_;
      if (config_.coalesce_writes) {
        std::swap(pending_, frames_.sending());
        pinned_sending_.swap(pinned_pending_);
      } else {
        // coalesce_writes off, the baseline: one request per write. Client queues hold no owned
        // segments, so the first frame is the first contiguous bytes.
        protocol::frame_header h;
        protocol::decode_header(pending_.at(0), h, UINT32_MAX);
        frames_.sending().append(std::string_view(pending_.at(0), h.frame_size()));
        frames_.sending().count_frame();
        pending_.erase_front(h.frame_size());
      }
      writing_ = start = true;
      // The queue just emptied: parked requests that fit now leave with the next write.
      if (!parked_.empty()) admit_parked_locked(admitted);
    }
  }
  rearm_timer();  // a call queued since the last flush may carry an earlier deadline
  if (start) start_write();
  if (!admitted.empty()) {
    // Their send_request awaits resume here, and may queue more (or drop the client).
    auto self = shared_from_this();
    for (call_base* c : admitted) c->admit();
  }
}

std::shared_ptr<byte_stream> client_connection::tls_keep() const {
  return stream_->is_tls() ? stream_ : nullptr;
}

void client_connection::start_write() {
  frames_.write(*stream_, nullptr,
                [self = shared_from_this(), keep = tls_keep(), epoch = epoch_](
                    const std::error_code& ec, std::size_t n) { self->on_write(epoch, ec, n); });
}

void client_connection::on_write(std::uint64_t epoch, const std::error_code& ec, std::size_t n) {
  frames_.end_write(n, stats_);
  {
    std::lock_guard lk(mutex_);
    writing_ = false;
  }
  unpin(pinned_sending_);  // borrowed bytes are no longer referenced
  if (ec && epoch == epoch_) {
    fail_all({rpc_errc::connection_closed, "write failed: " + ec.message()});
    return;
  }
  flush();
}

// ---- reading --------------------------------------------------------------------------

void client_connection::read_more(std::uint64_t epoch) {
  frames_.prepare_read(read_room::initial);
  frames_.read(*stream_, nullptr,
               [self = shared_from_this(), keep = tls_keep(), epoch](
                   const std::error_code& ec, std::size_t n) { self->on_read(epoch, ec, n); });
}

void client_connection::on_read(std::uint64_t epoch, const std::error_code& ec, std::size_t n) {
  // A read that completed before fail_all() closed the stream may still be queued: its bytes
  // went into the buffer fail_all() has since reset, and its calls have ended. Stale.
  if (epoch != epoch_ || !stream_->is_open()) return;
  if (ec) {
    if (ec != asio::error::operation_aborted) {
      const bool closed = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
      fail_all({rpc_errc::connection_closed,
                closed ? std::string("connection closed by the server")
                       : "read failed: " + (stream_->is_tls() ? describe_tls_failure(ec, X509_V_OK)
                                                              : ec.message())});
    }
    return;
  }
  read_at_ = std::chrono::steady_clock::now();  // also the arrival of the replies it holds
  frames_.commit_read(n, stats_, read_at_);
  dispatching_ = true;
  reply_role role{*this};
  const bool ok = frames_.process(role);
  dispatching_ = false;
  if (!ok) return;
  flush();
  frames_.end_batch(idle_read_buffer, false);
  read_more(epoch);
}

std::uint32_t client_connection::reply_role::max_frame_size() const noexcept {
  return c.config_.max_frame_size;
}

void client_connection::reply_role::on_bad_frame(const protocol::frame_header& h,
                                                 protocol::header_errc e) {
  c.fail_all(
      {rpc_errc::protocol_error,
       "bad reply from server: " + describe_bad_header(e, h, c.config_.max_frame_size, "reply",
                                                       "max_frame_size", "a response")});
}

void client_connection::reply_role::on_partial_frame(const protocol::frame_header& h) {
  byte_buffer& buf = c.frames_.read_buffer();
  buf.ensure_tail(h.frame_size() - buf.size());
}

frame_verdict client_connection::reply_role::on_frame(const protocol::frame_header& h,
                                                      const char* body) {
  // A frame with no must-understand bit (nearly every one) is tested once for them all, and
  // for the server's word that it accepts compressed requests.
  if ((h.flags & (protocol::must_understand_flags | protocol::flag_accepts_compressed)) != 0)
      [[unlikely]]
    return on_flagged_frame(h, body);
  return on_known_frame(h, body);
}

frame_verdict client_connection::reply_role::on_flagged_frame(const protocol::frame_header& h,
                                                              const char* body) {
  if ((h.flags & protocol::flag_accepts_compressed) != 0 &&
      h.type == protocol::msg_type::response && c.request_flags_ != 0)
    c.server_accepts_compressed();
  if (protocol::unknown_must_understand(h) != 0) {
    // A must-understand bit this build does not know for the frame: its call or stream ends with
    // protocol_error (a stream's server is told, by a cancel), a ping or pong is not acted on,
    // and the connection goes on: the frame's lengths are good.
    fail_frame_call(h, {rpc_errc::protocol_error, protocol::describe_unknown_must_understand(h)});
    return frame_verdict::next;
  }
  if ((h.flags & protocol::flag_compressed) != 0) return on_compressed_frame(h, body);
  if (h.type == protocol::msg_type::response && (h.flags & protocol::flag_metadata) != 0)
    return complete_with_metadata(h, body);
  return on_known_frame(h, body);
}

// Inlined into both callers: the flags are known to be understood, and a response's metadata
// block, if it had one, already read.
[[gnu::always_inline]] inline frame_verdict client_connection::reply_role::on_known_frame(
    const protocol::frame_header& h, const char* body) {
  if (h.type != protocol::msg_type::response) [[unlikely]] {
    if (h.type == protocol::msg_type::stream_item || h.type == protocol::msg_type::stream_credit) {
      c.on_stream_frame(h, body);
    } else if (h.type == protocol::msg_type::ping) {
      std::lock_guard lk(c.mutex_);
      c.queue_control_locked(protocol::make_pong(h.request_id));  // on_read flushes
    } else if (h.type == protocol::msg_type::pong && h.reactors != 0) {
      c.server_reactors_.store(h.reactors, std::memory_order_relaxed);  // servers state it
    }
    return frame_verdict::next;
  }
  return complete(h, std::string_view(body, h.body_length), body + h.body_length, nullptr);
}

frame_verdict client_connection::reply_role::complete_with_metadata(const protocol::frame_header& h,
                                                                    const char* body) {
  std::string_view reply_body(body, h.body_length);
  reply_metadata md = c.read_reply_metadata(reply_body);  // reply_body: what follows the block
  return complete(h, reply_body, body + h.body_length, &md);
}

frame_verdict client_connection::reply_role::complete(const protocol::frame_header& h,
                                                      std::string_view reply_body,
                                                      const char* attachment, reply_metadata* md) {
  if (h.request_id == 0 && h.status != rpc_errc::ok) [[unlikely]] {
    // The server rejected the stream itself (e.g. a corrupt frame) and is closing.
    std::string message;
    if (codec::decode(reply_body, message) != codec::decode_errc::ok)
      message = "server reported a connection error";
    c.fail_all({h.status, std::move(message)});
    return frame_verdict::fail;
  }
  // Counted before the caller resumes, so a caller that reads stats() sees its reply.
  c.stats_.on_frames_received(1);
  call_base* call;
  bool deferred = false;
  {
    std::lock_guard lk(c.mutex_);
    call = c.take_call(h.request_id);
    if (call != nullptr) {
      call_slot& slot = slot_of(*call);
      deferred = slot.completion_deferred = slot.pinned;
      metrics::client_recorder::ended(
          slot, md != nullptr && md->error ? rpc_errc::protocol_error : h.status, h.frame_size(),
          c.read_at_);
    }
  }
  if (call != nullptr) {  // else: a late reply to a call that already timed out
    if (md != nullptr) [[unlikely]] {
      if (!deliver_reply_metadata(*call, *md)) {
        finish_call(call, deferred);
        return frame_verdict::next;
      }
    }
    call->set_reply(h.status, reply_body, std::string_view(attachment, h.attachment_length));
    finish_call(call, deferred);  // may resume the caller right here, on this reactor
  }
  return frame_verdict::next;
}

client_connection::reply_metadata client_connection::read_reply_metadata(
    std::string_view& body) const {
  reply_metadata out;
  protocol::metadata_read r = protocol::read_metadata(
      body, {.max_entries = config_.max_metadata_entries, .max_bytes = config_.max_metadata_bytes});
  if (r.code != rpc_errc::ok) {
    out.error = rpc_error(rpc_errc::protocol_error, "bad reply metadata: " + r.message);
    return out;
  }
  out.entries = r.entries;
  body.remove_prefix(r.consumed);
  return out;
}

bool client_connection::deliver_reply_metadata(call_base& call, reply_metadata& md) noexcept {
  if (md.error) {
    call.set_error(std::move(md.error));
    return false;
  }
  if (metadata* to = call.reply_metadata(); to != nullptr) {
    try {
      *to = md.entries.to_metadata();
    } catch (...) {  // only std::bad_alloc can get here
      call.set_error({rpc_errc::message_too_large, "out of memory copying reply metadata"});
      return false;
    }
  }
  return true;
}

// ---- deadlines ------------------------------------------------------------------------

void client_connection::rearm_timer() {
  std::chrono::steady_clock::time_point earliest;
  {
    std::lock_guard lk(mutex_);
    earliest = deadlines_.earliest();
  }
  if (earliest >= timer_armed_for_) return;
  timer_armed_for_ = earliest;
  deadline_timer_.expires_at(earliest);
  deadline_timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (!ec) self->on_timer();
  });
}

void client_connection::on_timer() {
  timer_armed_for_ = std::chrono::steady_clock::time_point::max();
  std::vector<std::pair<call_base*, bool>> expired;
  std::vector<call_base*> expired_parked;  // never queued: nothing to cancel on the server
  {
    std::lock_guard lk(mutex_);
    const auto now = std::chrono::steady_clock::now();
    while (call_base* c = deadlines_.pop_expired(now)) {
      call_slot& slot = slot_of(*c);
      metrics::client_recorder::ended(slot, rpc_errc::timeout, 0, now);
      if (slot.parked != nullptr) {
        parked_.remove(c);  // freed here
        expired_parked.push_back(c);
        continue;
      }
      const std::uint64_t id = slot.id;
      calls_.take(id);  // c: every call in the deadline list is in the table
      slot.completion_deferred = slot.pinned;
      expired.emplace_back(c, slot.pinned);
      // A coroutine handler may still be working on it: tell the server to stop.
      if (config_.send_cancel && open_locked()) queue_control_locked(protocol::make_cancel(id));
    }
  }
  for (auto [c, deferred] : expired) {
    c->set_error({rpc_errc::timeout, "no reply before the call's deadline"});
    finish_call(c, deferred);
  }
  for (call_base* c : expired_parked) {
    c->set_error(rpc_error::unsent(
        rpc_errc::timeout,
        "deadline passed while waiting for room to send (client at max_pending_calls or "
        "max_queued_request_bytes)"));
    c->admit();
    finish_call(c, false);
  }
  if (!expired.empty()) flush();  // the cancel frames
  rearm_timer();
}

// ---- cancellation and heartbeats -------------------------------------------------------

void client_connection::on_stream_frame(const protocol::frame_header& h, const char* body) {
  client_stream* s = nullptr;
  {
    std::lock_guard lk(mutex_);
    call_base* call = calls_.find(h.request_id);
    if (call != nullptr) s = call->as_stream();
    if (s != nullptr) s->add_ref();
  }
  if (s == nullptr) return;  // a stream that has ended here (cancelled, timed out)
  if (h.type == protocol::msg_type::stream_item) {
    stats_.on_frames_received(1);
    s->on_item(std::string_view(body, h.body_length));
  } else {
    s->on_credit(h.credit);
  }
  s->release();
}

rpc_error client_connection::send_item(client_stream* s, const request_encoder& encode) {
  std::unique_lock lk(mutex_);
  if (!open_locked() || calls_.find(slot_of(*s).id) != s) {
    lk.unlock();
    rpc_error e = s->end_error();
    return e ? e : rpc_error(rpc_errc::connection_closed, "the stream has ended");
  }
  const std::size_t mark = pending_.mark();
  pending_.extend(protocol::header_size);
  try {
    encode.to_queue(encode.args, pending_);
  } catch (...) {
    pending_.rollback(mark);
    return encode_failure("a stream item");
  }
  std::size_t body = pending_.mark() - mark - protocol::header_size;
  if (body > config_.max_frame_size) {
    pending_.rollback(mark);
    return too_large(body);
  }
  protocol::frame_header h = protocol::make_item(slot_of(*s).id, static_cast<std::uint32_t>(body));
  if (body >= compress_from_) [[unlikely]] {
    std::string_view none;
    h.flags = compress_locked(mark, body, none);
    h.body_length = static_cast<std::uint32_t>(body);
  }
  protocol::encode_header(h, pending_.at(mark));
  pending_.count_frame();
  const bool kick = schedule_flush_locked();
  lk.unlock();
  if (kick) kick_flush();
  return {};
}

void client_connection::queue_stream_control(client_stream* s, const protocol::frame_header& h) {
  bool kick = false;
  {
    std::lock_guard lk(mutex_);
    if (!open_locked() || calls_.find(slot_of(*s).id) != s) return;
    append_header_frame(pending_, h);
    kick = schedule_flush_locked();
  }
  if (kick) kick_flush();
}

void client_connection::queue_extra_credit_locked(call_base* call) noexcept {
  try {
    append_header_frame(pending_,
                        protocol::make_credit(slot_of(*call).id, slot_of(*call).extra_credit));
  } catch (...) {  // no memory for 32 bytes: the stream keeps the initial window
  }
}

void client_connection::send_credit(client_stream* s, std::uint32_t bytes) noexcept {
  try {
    queue_stream_control(s, protocol::make_credit(slot_of(*s).id, bytes));
  } catch (...) {  // no memory for 32 bytes: the server waits; the stream may stall
  }
}

void client_connection::close_writes(client_stream* s) noexcept {
  try {
    queue_stream_control(s, protocol::make_stream_end(slot_of(*s).id));
  } catch (...) {
  }
}

void client_connection::resume_later(std::coroutine_handle<> h) noexcept {
  try {
    asio::post(reactor_, recycled([h] { h.resume(); }));
  } catch (...) {  // no memory to post: resume here
    h.resume();
  }
}

void client_connection::queue_control_locked(const protocol::frame_header& h) {
  append_header_frame(pending_, h);
  if (h.type == protocol::msg_type::cancel) stats_.on_cancelled();
  if (h.type == protocol::msg_type::ping) stats_.on_ping();
}

void client_connection::cancel(call_base* call) {
  bool deferred = false;
  bool kick = false;
  {
    std::lock_guard lk(mutex_);
    call_slot& slot = slot_of(*call);
    const std::uint64_t id = slot.id;
    if (take_call(id) != call) return;  // ended already (its id no longer matches)
    deferred = slot.completion_deferred = slot.pinned;
    if (slot.call_stats != nullptr) {
      metrics::client_recorder::ended(slot, rpc_errc::cancelled, 0,
                                      std::chrono::steady_clock::now());
    }
    if (config_.send_cancel && open_locked()) queue_control_locked(protocol::make_cancel(id));
    // The cancel frame, and parked requests the freed slot may make room for.
    if ((config_.send_cancel || !parked_.empty()) && open_locked()) kick = schedule_flush_locked();
  }
  call->set_error({rpc_errc::cancelled, "cancelled by the caller"});
  finish_call(call, deferred);  // drops the connection's reference
  if (kick) kick_flush();
}

void client_connection::arm_heartbeat(std::uint64_t epoch) {
  if (config_.heartbeat_interval.count() <= 0 && config_.heartbeat_timeout.count() <= 0) return;
  heartbeat_timer_.expires_at(
      frames_.clock.next_check(config_.heartbeat_interval, config_.heartbeat_timeout));
  heartbeat_timer_.async_wait([self = shared_from_this(), epoch](const std::error_code& ec) {
    if (!ec && epoch == self->epoch_) self->on_heartbeat(epoch);
  });
}

void client_connection::on_heartbeat(std::uint64_t epoch) {
  const auto now = std::chrono::steady_clock::now();
  if (frames_.clock.silent(now, config_.heartbeat_timeout)) {
    stats_.on_dead_peer();
    fail_all(
        {rpc_errc::connection_closed, "nothing heard from the server for " +
                                          std::to_string(config_.heartbeat_timeout.count()) +
                                          " ms (heartbeat timeout): connection presumed dead"});
    return;
  }
  if (frames_.clock.take_ping(now, config_.heartbeat_interval)) {
    bool kick;
    {
      std::lock_guard lk(mutex_);
      if (!open_locked()) return;
      queue_control_locked(protocol::make_ping(0));
      kick = schedule_flush_locked();
    }
    if (kick) flush();
  }
  arm_heartbeat(epoch);
}

}  // namespace corvid::detail
