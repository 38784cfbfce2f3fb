#include "connection_admission.hpp"

#include <algorithm>
#include <string>

namespace corvid::detail {

connection_admission::connection_admission(server_memory& memory, const server_config& config,
                                           const std::string& peer)
    : server_(memory),
      mem_(memory, peer),
      max_calls_(config.max_calls_per_connection),
      max_streams_(config.max_streams_per_connection),
      // An eighth of the worker queue (at least one place): one connection pipelining slow
      // blocking calls pauses there, and the rest of the queue stays for everyone else.
      blocking_share_(std::max<std::size_t>(1, config.worker_queue_length / 8)),
      blocking_bytes_share_(config.worker_queue_bytes / 8),
      busy_at_limit_(config.busy_at_memory_limit) {}

verdict connection_admission::decide_request(const protocol::frame_header& h, bool duplicate_id,
                                             bool blocking, std::size_t queued_replies) {
  if (h.request_id == 0) return verdict::fail("request id 0 is reserved");
  if (duplicate_id) {
    // Its reply could not be told from the running call's: the client is broken.
    return verdict::fail("request id " + std::to_string(h.request_id) +
                         " reused while its call is running");
  }
  if (draining_)
    return verdict::refuse(rpc_errc::server_busy, "the server is stopping: no new calls");
  // Limits that pause the connection: the frame stays in the buffer, nothing more is read,
  // and the batch goes on when the limit lifts.
  if (calls_ >= max_calls_) return verdict::pause(pause_reason::calls);
  if (blocking && !worker_share_left(h.payload_size())) {
    return verdict::pause(pause_reason::workers);
  }
  // Room for a reply, from the reply credit: refused, either this connection's queue is full
  // or the server is, and dispatching would only produce errors.
  const bool server_full = !mem_.reserve_reply(min_dispatch_room, queued_replies);
  if (server_full && mem_.replies_full(queued_replies))
    return verdict::pause(pause_reason::replies);
  if (server_full && !busy_at_limit_)
    return verdict::pause(pause_reason::memory, min_dispatch_room);
  // Room for the request bytes a coroutine call copies, before it runs.
  if (!server_full && mem_.admit(h.payload_size())) return verdict::admit();
  return refuse_or_wait(h, server_full);
}

verdict connection_admission::refuse_or_wait(const protocol::frame_header& h, bool server_full) {
  if (!mem_.call_could_fit(h.payload_size())) {  // waiting would never end
    return verdict::refuse(rpc_errc::message_too_large,
                           "request of " + std::to_string(h.payload_size()) +
                               " bytes exceeds the server's memory for running calls (" +
                               std::to_string(std::min(server_.in_flight.limit(),
                                                       server_.max_call_bytes_per_connection)) +
                               " bytes)");
  }
  if (busy_at_limit_ || server_full) {
    return verdict::refuse(rpc_errc::server_busy, "server at its memory limit");
  }
  return verdict::pause(pause_reason::memory, h.payload_size());
}

verdict connection_admission::open_stream() {
  if (max_streams_ != 0 && streams_ >= max_streams_) {
    return verdict::refuse(
        rpc_errc::server_busy,
        "too many open streams on this connection (max_streams_per_connection = " +
            std::to_string(max_streams_) + ")");
  }
  ++streams_;
  return verdict::admit();
}

verdict connection_admission::admit_item(std::size_t cost) {
  if (mem_.hold(cost)) return verdict::admit();  // held by the inbox until taken: release()
  if (!mem_.call_could_fit(cost)) {              // waiting would never end: the item is dropped
    return verdict::refuse(rpc_errc::message_too_large,
                           "stream item of " + std::to_string(cost) +
                               " bytes exceeds the server's memory for running calls");
  }
  return verdict::pause(pause_reason::memory, cost);
}

bool connection_admission::hold(std::size_t bytes) noexcept { return mem_.hold(bytes); }

bool connection_admission::call_finished(bool blocking, std::size_t blocking_bytes) noexcept {
  --calls_;
  bool lifted = false;
  if (blocking) {
    --blocking_;
    blocking_bytes_ -= std::min(blocking_bytes, blocking_bytes_);
    // Lifted for the next one; if it is bigger than what is left, it pauses again.
    lifted |= lift(pause_reason::workers);
  }
  if (calls_ < max_calls_) lifted |= lift(pause_reason::calls);
  return lifted && !paused();
}

}  // namespace corvid::detail
